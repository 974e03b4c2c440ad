//! The built-in model table: what keel knows of the common models without asking.

use super::{BASIC, Capabilities, ModelInfo, Pricing, Source, SystemRole};

pub(super) const fn anthropic_price(input: f64, output: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        output,
        cache_write: input * 1.25,
        cache_read: input * 0.1,
    })
}

/// OpenAI and DeepSeek bill cached input at a discount and cache writes at the input price.
const fn cached_price(input: f64, output: f64, cache_read: f64) -> Option<Pricing> {
    Some(Pricing {
        input,
        output,
        cache_write: input,
        cache_read,
    })
}

const fn entry(window: u64, max_output: u32, pricing: Option<Pricing>, caps: Capabilities) -> ModelInfo {
    ModelInfo {
        context_window: window,
        max_output,
        pricing,
        caps,
        source: Source::Table,
    }
}

const CLAUDE: Capabilities = Capabilities {
    images: true,
    thinking: true,
    ..BASIC
};
const GPT: Capabilities = Capabilities {
    images: true,
    max_completion_tokens: true,
    ..BASIC
};
const GPT_REASONING: Capabilities = Capabilities {
    images: true,
    thinking: true,
    system_role: SystemRole::Developer,
    max_completion_tokens: true,
    ..BASIC
};
const REASONING: Capabilities = Capabilities {
    thinking: true,
    ..BASIC
};
const VISION: Capabilities = Capabilities { images: true, ..BASIC };
const NO_TOOLS: Capabilities = Capabilities { tools: false, ..BASIC };

/// The built-in table, matched on the model's name without provider prefix, lower case.
pub(super) fn table(m: &str) -> Option<ModelInfo> {
    let has = |s: &str| m.contains(s);
    let starts = |s: &str| m.starts_with(s);
    let info = if has("claude") || has("opus") || has("sonnet") || has("haiku") {
        // The 5.5 generation: a million-token window, 128k output.
        if has("opus-5-5") || has("opus-5.5") {
            entry(1_000_000, 128_000, anthropic_price(4.0, 20.0), CLAUDE)
        } else if has("sonnet-5-5") || has("sonnet-5.5") {
            entry(1_000_000, 128_000, anthropic_price(2.0, 10.0), CLAUDE)
        } else if has("haiku-5-5") || has("haiku-5.5") {
            entry(1_000_000, 128_000, anthropic_price(0.1, 0.5), CLAUDE)
        } else if has("opus-4-5") || has("opus-4-6") || has("opus-4.5") {
            entry(200_000, 32_000, anthropic_price(5.0, 25.0), CLAUDE)
        } else if has("opus") {
            entry(200_000, 32_000, anthropic_price(15.0, 75.0), CLAUDE)
        } else if has("sonnet") {
            entry(200_000, 32_000, anthropic_price(3.0, 15.0), CLAUDE)
        } else if has("haiku-4") || has("haiku-4.5") {
            entry(200_000, 32_000, anthropic_price(1.0, 5.0), CLAUDE)
        } else if has("haiku") {
            entry(200_000, 8_192, anthropic_price(0.8, 4.0), CLAUDE)
        } else {
            entry(200_000, 8_192, None, CLAUDE)
        }
    } else if has("gpt-oss") {
        entry(131_072, 32_768, None, REASONING)
    } else if starts("gpt-5") {
        let p = if has("nano") {
            cached_price(0.05, 0.4, 0.005)
        } else if has("mini") {
            cached_price(0.25, 2.0, 0.025)
        } else {
            cached_price(1.25, 10.0, 0.125)
        };
        entry(400_000, 128_000, p, GPT_REASONING)
    } else if starts("gpt-4.1") {
        let p = if has("nano") {
            cached_price(0.1, 0.4, 0.025)
        } else if has("mini") {
            cached_price(0.4, 1.6, 0.1)
        } else {
            cached_price(2.0, 8.0, 0.5)
        };
        entry(1_047_576, 32_768, p, GPT)
    } else if starts("gpt-4o") {
        let p = if has("mini") {
            cached_price(0.15, 0.6, 0.075)
        } else {
            cached_price(2.5, 10.0, 1.25)
        };
        entry(128_000, 16_384, p, GPT)
    } else if starts("o4-mini") {
        entry(200_000, 100_000, cached_price(1.1, 4.4, 0.275), GPT_REASONING)
    } else if starts("o3-mini") {
        let caps = Capabilities {
            images: false,
            ..GPT_REASONING
        };
        entry(200_000, 100_000, cached_price(1.1, 4.4, 0.55), caps)
    } else if starts("o3") {
        entry(200_000, 100_000, cached_price(2.0, 8.0, 0.5), GPT_REASONING)
    } else if starts("o1") {
        entry(200_000, 100_000, cached_price(15.0, 60.0, 7.5), GPT_REASONING)
    } else if has("deepseek") {
        if has("deepseek-reasoner") {
            let caps = Capabilities {
                send_reasoning: true,
                ..REASONING
            };
            entry(128_000, 64_000, cached_price(0.28, 0.42, 0.028), caps)
        } else if has("deepseek-chat") {
            entry(128_000, 8_000, cached_price(0.28, 0.42, 0.028), BASIC)
        } else if has("r1") {
            entry(131_072, 32_768, None, REASONING)
        } else if has("coder-v2") {
            entry(163_840, 8_192, None, BASIC)
        } else {
            entry(131_072, 8_192, None, BASIC)
        }
    } else if has("qwen") || has("qwq") {
        if has("qwen3-coder") {
            entry(262_144, 65_536, None, BASIC)
        } else if has("qwq") {
            entry(131_072, 32_768, None, REASONING)
        } else if has("qwen3") {
            entry(32_768, 16_384, None, REASONING)
        } else if has("vl") {
            entry(32_768, 8_192, None, VISION)
        } else {
            entry(32_768, 8_192, None, BASIC)
        }
    } else if has("llama") {
        if has("llama4") || has("llama-4") {
            entry(1_048_576, 16_384, None, VISION)
        } else if has("codellama") {
            entry(16_384, 4_096, None, BASIC)
        } else if [
            "llama3.1",
            "llama3.2",
            "llama3.3",
            "llama-3.1",
            "llama-3.2",
            "llama-3.3",
        ]
        .iter()
        .any(|v| has(v))
        {
            let caps = if has("vision") { VISION } else { BASIC };
            entry(131_072, 8_192, None, caps)
        } else {
            entry(8_192, 4_096, None, BASIC)
        }
    } else if has("gemma") {
        if has("gemma3n") || has("gemma-3n") {
            entry(32_768, 8_192, None, NO_TOOLS)
        } else if has("gemma3") || has("gemma-3") {
            let caps = Capabilities {
                images: true,
                ..NO_TOOLS
            };
            entry(131_072, 8_192, None, caps)
        } else {
            entry(8_192, 4_096, None, NO_TOOLS)
        }
    } else if has("codestral") {
        entry(256_000, 16_384, None, BASIC)
    } else if has("magistral") {
        entry(40_000, 16_384, None, REASONING)
    } else if has("devstral")
        || has("mistral-large")
        || has("mistral-medium")
        || has("mistral-nemo")
        || has("ministral")
    {
        entry(131_072, 16_384, None, BASIC)
    } else if has("mistral-small") || has("pixtral") {
        entry(131_072, 16_384, None, VISION)
    } else if has("mixtral") || has("mistral") {
        entry(32_768, 8_192, None, BASIC)
    } else if has("gemini-2") || has("gemini-3") {
        let caps = if has("2.0") {
            VISION
        } else {
            Capabilities {
                thinking: true,
                ..VISION
            }
        };
        entry(1_048_576, 65_536, None, caps)
    } else {
        return None;
    };
    Some(info)
}
