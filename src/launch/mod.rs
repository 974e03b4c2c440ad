//! From options to a ready engine: the run's options (`options`, lowered once by `cli/`), the
//! provider and model (`model`), the extensions (`extensions`) and the session's setup
//! (`setup`), shared by headless mode and the TUI.

pub mod extensions;
pub mod model;
pub mod options;
pub mod provenance;
pub mod setup;
pub mod values;
