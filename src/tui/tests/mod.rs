//! Snapshot and key-handling tests of the TUI, fed with engine events (no model, no terminal).
