//! `initialize`'s `skills` list: the main session offers only the listed skills. Unlisted ones
//! leave the model's listing, `system/init` and the `/name` commands, and a deny rule for the
//! session makes the Skill tool refuse them. As with the reference this is a context filter,
//! not a sandbox: the skills' files stay readable.

use std::sync::Arc;

use super::Engine;
use crate::permissions::rules::Behavior;
use crate::permissions::updates::{Destination, RuleOp};
use crate::skills::{Catalog, listing};

impl Engine {
    /// Keeps the listed skills (`name`, or `plugin:name`); returns a warning per name that names no
    /// skill.
    pub fn keep_only_skills(&mut self, names: &[String]) -> Result<Vec<String>, String> {
        let engine = self;
        let catalog = engine.harness.skills.clone();
        let warnings = names
            .iter()
            .filter(|n| catalog.get(n).is_none())
            .map(|n| format!("skills: there is no skill named `{n}`"))
            .collect();
        let (kept, dropped): (Vec<_>, Vec<_>) = catalog.iter().cloned().partition(|s| names.contains(&s.name));
        if dropped.is_empty() {
            return Ok(warnings);
        }
        let rules: Vec<String> = dropped.iter().map(|s| format!("Skill({})", s.name)).collect();
        engine
            .authorizer
            .update_rules(RuleOp::Add, Behavior::Deny, &rules, Destination::Session)?;
        let mut filtered = Catalog::from_skills(kept);
        filtered.project_trusted = catalog.project_trusted;
        let filtered = Arc::new(filtered);
        engine.harness.skills = filtered.clone();
        let mut project = engine.project.clone();
        let had_listing = project.listings.iter().any(|l| l.starts_with(listing::LISTING_LEAD));
        project.listings.retain(|l| !l.starts_with(listing::LISTING_LEAD));
        project.listing_notes.clear();
        let budget = listing::budget(engine.compactor.window.total);
        if had_listing && let Some((l, left)) = listing::render_fitted(filtered.for_model(), budget) {
            // The skill listing comes first among the sections, as at startup.
            project.listings.insert(0, l);
            project.listing_notes = left.describe(budget);
        }
        engine.set_project(project);
        Ok(warnings)
    }
}
