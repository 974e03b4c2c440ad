//! Input: the prompt editor, completion, and `@path` mentions.

pub mod completion;
pub mod editor;
pub mod history;
pub mod mentions;
