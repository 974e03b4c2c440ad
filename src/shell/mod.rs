//! Shell command lines, read without running them: the one lexer of the crate (`parse`),
//! what one simple command does (`commands`), and how programs read their options (`options`,
//! with the per-program tables in `option_tables`). The permission layer, the evidence ledger
//! and shell undo all read commands through this module.

pub mod commands;
pub mod option_tables;
pub mod options;
pub mod parse;
