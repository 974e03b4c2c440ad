//! The `verification` settings: the stop gate's mode and the project's declared commands.

use super::declared;
use super::gate::GateMode;
use super::runners::Declared;
use crate::config::settings::{Settings, SettingsError};

/// The `verification` settings.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub gate: GateMode,
    pub declared: Declared,
}

impl Config {
    /// `verification.stopGate` (`KEEL_VERIFICATION_GATE` wins over it) and
    /// `verification.commands` from the settings, plus the commands the instruction files'
    /// build-and-test sections list. Returns the config and warnings
    /// (declared commands keel refused).
    pub fn from_settings<'a>(
        settings: &Settings,
        instructions: impl Iterator<Item = &'a str>,
    ) -> Result<(Config, Vec<String>), SettingsError> {
        let gate = match settings.nested(&["verification", "stopGate"]) {
            None => GateMode::default(),
            Some((v, layer)) => v
                .as_str()
                .and_then(GateMode::parse)
                .ok_or_else(|| SettingsError::Invalid {
                    path: layer.label(),
                    key: "verification.stopGate".into(),
                    problem: format!("must be \"nudge\", \"require\" or \"off\", found {v}"),
                })?,
        };
        let mut commands: Vec<String> = settings
            .strings(&["verification", "commands"])?
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        for text in instructions {
            commands.extend(declared::from_instructions(text));
        }
        let gate = match std::env::var("KEEL_VERIFICATION_GATE") {
            Ok(v) if !v.trim().is_empty() => GateMode::parse(v.trim()).ok_or_else(|| SettingsError::Invalid {
                path: "environment".into(),
                key: "KEEL_VERIFICATION_GATE".into(),
                problem: format!("must be \"nudge\", \"require\" or \"off\", found `{v}`"),
            })?,
            _ => gate,
        };
        let (declared, refused) = Declared::new(commands);
        let warnings = refused
            .into_iter()
            .map(|r| format!("verification command {r}; it is not treated as a test run"))
            .collect();
        Ok((Config { gate, declared }, warnings))
    }
}
