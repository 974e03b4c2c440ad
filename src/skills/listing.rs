//! The skill listing in the model's context: names and descriptions only, within a budget of
//! about 1% of the context window in characters. Names are always kept; when the descriptions
//! do not fit, the longest are trimmed first (all to one common length, as short as needed).

use super::Skill;

/// Budget when the window is unknown, and the reference's default for a 200K window.
pub const DEFAULT_BUDGET: usize = 8_000;
/// Most characters of one entry's description (with its `when_to_use`).
pub const ENTRY_CAP: usize = 1_536;
/// Characters per token used to turn the window into a character budget.
const CHARS_PER_TOKEN: u64 = 4;

/// The listing budget for a context window of `window_tokens`: 1% of it in characters, or
/// `SLASH_COMMAND_TOOL_CHAR_BUDGET` when set.
pub fn budget(window_tokens: u64) -> usize {
    if let Some(n) = std::env::var("SLASH_COMMAND_TOOL_CHAR_BUDGET")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return n;
    }
    if window_tokens == 0 {
        return DEFAULT_BUDGET;
    }
    (window_tokens * CHARS_PER_TOKEN / 100) as usize
}

/// What one entry says about its skill, before trimming.
fn about(s: &Skill) -> String {
    let mut text = s.description.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(w) = &s.when_to_use {
        let w = w.split_whitespace().collect::<Vec<_>>().join(" ");
        if !w.is_empty() {
            text.push_str(" When to use: ");
            text.push_str(&w);
        }
    }
    cut(&text, ENTRY_CAP)
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// How the skill listing begins (front ends find it among the project layer's sections by it).
pub const LISTING_LEAD: &str = "Skills available in this session. When a task matches a skill's description, load the skill \
     with the Skill tool (`skill`: its name, `args`: optional arguments) before doing the task; its full instructions \
     arrive then. Only names and descriptions are listed here.";

/// The listing text, or `None` when there is nothing to list. `budget` bounds the entries'
/// characters (the fixed lead-in is not counted).
pub fn render<'a>(skills: impl IntoIterator<Item = &'a Skill>, budget: usize) -> Option<String> {
    let entries: Vec<(&str, String)> = skills.into_iter().map(|s| (s.name.as_str(), about(s))).collect();
    if entries.is_empty() {
        return None;
    }
    let lens: Vec<usize> = entries.iter().map(|(_, a)| a.chars().count()).collect();
    // "- name: " + description + newline.
    let fixed: usize = entries.iter().map(|(n, _)| n.chars().count() + 5).sum();
    let total_at = |limit: usize| fixed + lens.iter().map(|l| (*l).min(limit)).sum::<usize>();
    let longest = lens.iter().copied().max().unwrap_or(0);
    let limit = if total_at(longest) <= budget {
        longest
    } else {
        // The largest common length that fits (binary search; 0 keeps names only).
        let (mut lo, mut hi) = (0usize, longest);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if total_at(mid) <= budget {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        lo
    };
    let mut out = String::from(LISTING_LEAD);
    for (name, about) in &entries {
        let text = cut(about, limit);
        if text.is_empty() {
            out.push_str(&format!("\n- {name}"));
        } else {
            out.push_str(&format!("\n- {name}: {text}"));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Kind, Source, parse};
    use std::path::Path;

    fn skill(name: &str, description: &str) -> Skill {
        parse(
            &format!("---\ndescription: \"{description}\"\n---\nBODY-{name}\n"),
            Path::new("/s/SKILL.md"),
            name,
            Kind::Skill,
            Source::Project,
        )
        .unwrap()
    }

    fn entries(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with("- ")).collect()
    }

    #[test]
    fn everything_fits_in_a_large_budget_and_bodies_are_never_listed() {
        let s = [skill("a", "short one"), skill("b", "another")];
        let text = render(&s, 10_000).unwrap();
        assert_eq!(entries(&text), vec!["- a: short one", "- b: another"]);
        assert!(!text.contains("BODY"));
        assert_eq!(render(std::iter::empty(), 100), None);
    }

    #[test]
    fn longest_descriptions_are_trimmed_first_and_names_stay() {
        let long = "x".repeat(400);
        let s = [
            skill("short", "tiny"),
            skill("long", &long),
            skill("mid", &"m".repeat(100)),
        ];
        let budget = 150;
        let text = render(&s, budget).unwrap();
        let e = entries(&text);
        let body: usize = e.iter().map(|l| l.chars().count() + 1).sum();
        assert!(body <= budget, "{body} > {budget}: {e:?}");
        assert_eq!(e[0], "- short: tiny", "short descriptions stay whole");
        assert!(e[1].starts_with("- long: xxx") && e[1].ends_with('…'), "{}", e[1]);
        assert!(e[2].starts_with("- mid: mmm") && e[2].ends_with('…'), "{}", e[2]);
        // Both long ones were cut to the same length.
        assert_eq!(
            e[1].chars().count() - "- long: ".len(),
            e[2].chars().count() - "- mid: ".len()
        );
        // A budget too small for any description keeps every name.
        let text = render(&s, 10).unwrap();
        assert_eq!(entries(&text), vec!["- short", "- long", "- mid"]);
    }

    #[test]
    fn budget_is_one_percent_of_the_window_in_characters() {
        assert_eq!(budget(200_000), 8_000);
        assert_eq!(budget(1_000_000), 40_000);
        assert_eq!(budget(0), DEFAULT_BUDGET);
    }
}
