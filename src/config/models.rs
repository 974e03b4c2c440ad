//! The model table: aliases, context windows and prices.

/// Used when neither `--model` nor a setting names one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// USD per million tokens.
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    pub context_window: u64,
    pub max_output: u32,
    pub pricing: Option<Pricing>,
}

const fn price(input: f64, output: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        output,
        cache_write: input * 1.25,
        cache_read: input * 0.1,
    })
}

/// Resolves the reference's aliases to full model ids.
pub fn resolve_alias(name: &str) -> String {
    match name {
        "sonnet" => "claude-sonnet-4-5".into(),
        "opus" => "claude-opus-4-5".into(),
        "haiku" => "claude-haiku-4-5".into(),
        other => other.to_string(),
    }
}

/// What keel knows about a model; unknown models get a conservative window and no price.
pub fn info(model: &str) -> ModelInfo {
    let m = model.to_ascii_lowercase();
    let (window, max_output, pricing) = if m.contains("opus-4-5") || m.contains("opus-4-6") {
        (200_000, 32_000, price(5.0, 25.0))
    } else if m.contains("opus") {
        (200_000, 32_000, price(15.0, 75.0))
    } else if m.contains("sonnet") {
        (200_000, 32_000, price(3.0, 15.0))
    } else if m.contains("haiku-4") {
        (200_000, 32_000, price(1.0, 5.0))
    } else if m.contains("haiku") {
        (200_000, 8_192, price(0.8, 4.0))
    } else {
        (200_000, 16_000, None)
    };
    ModelInfo {
        context_window: window,
        max_output,
        pricing,
    }
}

impl Pricing {
    pub fn cost(&self, usage: &crate::message::Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_creation_input_tokens as f64 * self.cache_write
            + usage.cache_read_input_tokens as f64 * self.cache_read)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    #[test]
    fn aliases_and_costs() {
        assert_eq!(resolve_alias("sonnet"), "claude-sonnet-4-5");
        let p = info("claude-sonnet-4-5").pricing.unwrap();
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..Usage::default()
        };
        assert!((p.cost(&u) - 18.0).abs() < 1e-9);
        assert!(info("some-local-model").pricing.is_none());
    }
}
