//! From options to a ready engine: the run's options (`options`, lowered once by `cli/`), the
//! provider and model (`model`), the extensions (`extensions`), the session to write and its
//! lock (`place`) and the session's setup (`setup`), shared by headless mode and the TUI.

pub mod extensions;
pub mod model;
pub mod options;
mod place;
pub mod provenance;
pub mod setup;
pub mod values;
pub mod web;
