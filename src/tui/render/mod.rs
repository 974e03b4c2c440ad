//! Drawing: markdown, code highlighting, diffs, wrapping, colours, and the screen layout.

pub mod approval;
pub mod diff;
pub mod form;
pub mod highlight;
pub mod markdown;
pub mod modal;
pub mod status;
pub mod theme;
pub mod wrap;
