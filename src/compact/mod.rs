//! Context compaction tiers. Tier 1 (tool result budget) runs on every tool result.

pub mod budget;
