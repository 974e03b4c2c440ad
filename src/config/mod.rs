//! Configuration: paths, the model table, the settings layers and what each layer may change.

pub mod managed;
pub mod models;
pub mod paths;
pub mod precedence;
pub mod settings;
pub mod spelling;
pub mod trust;
