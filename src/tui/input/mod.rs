//! Input: the prompt editor, completion (`@path` mentions are attached by `engine::mentions`).

pub mod completion;
pub mod editor;
pub mod history;
