//! Shell command lines, read without running them: the strict judgement the permission layer
//! decides on (`parse`), the tolerant split the evidence ledger and shell undo read (`split`),
//! both made once per call into a [`plan::CommandPlan`] that travels with the call; what one
//! simple command does (`commands`), and how programs read their options (`options`, with the
//! per-program tables in `option_tables`). `loose` reads every command a line may run where
//! the strict reader refuses, for the guards that hold in every mode.

pub mod commands;
pub mod loose;
pub mod option_tables;
pub mod options;
pub mod parse;
pub mod plan;
pub mod split;
