//! Configuration: paths and the model table (settings layers come with permissions).

pub mod models;
pub mod paths;
pub mod settings;
pub mod trust;
