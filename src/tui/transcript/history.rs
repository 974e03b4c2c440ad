//! Rebuilds transcript cells from a conversation (resume, `--continue`).

use std::path::Path;

use crate::engine::NoticeLevel;
use crate::types::message::{ContentBlock, Message, Role};

use super::{CellKind, ShellCell, ToolCell, ToolStatus, Transcript};
use crate::engine::mentions;
use crate::evidence::gate;
use crate::tui::shell;

/// The marker the engine leaves when a turn is interrupted.
const INTERRUPTED: &str = "[Request interrupted by user]";

fn is_handoff(m: &Message) -> bool {
    matches!(m.content.first(), Some(ContentBlock::Text { text, .. }) if text.starts_with(crate::compact::autocompact::handoff::LEAD))
}

pub fn fill(t: &mut Transcript, history: &[Message], cwd: &Path) {
    for message in history {
        match message.role {
            // The message that starts a compacted conversation is keel's, never the user's.
            Role::User if is_handoff(message) => {
                let text: Vec<&str> = message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                t.push(CellKind::Handoff {
                    text: text.join("\n\n"),
                });
            }
            Role::User => {
                let mut text = String::new();
                let mut attached = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text: s, .. } if s.trim() == INTERRUPTED => {
                            t.push(CellKind::Notice {
                                level: NoticeLevel::Warning,
                                text: "Interrupted".into(),
                            });
                        }
                        // The stop gate's note is keel's: shown as the notice it was live.
                        ContentBlock::Text { text: s, .. } if s.starts_with(gate::LEAD) => {
                            t.push(CellKind::Notice {
                                level: NoticeLevel::Info,
                                text: gate::sent_back_notice(None),
                            });
                        }
                        ContentBlock::Text { text: s, .. } if s.starts_with(mentions::ATTACHMENT_LEAD) => {
                            let first = s.lines().next().unwrap_or("").trim_end_matches(':');
                            let what = first.strip_prefix(mentions::ATTACHMENT_LEAD).unwrap_or(first);
                            attached.push(format!("attached {what}"));
                        }
                        ContentBlock::Text { text: s, .. } if shell::parse_context_text(s).is_some() => {
                            if let Some((command, output, status)) = shell::parse_context_text(s) {
                                let exit_code = status.strip_prefix("exit code ").and_then(|c| c.parse().ok());
                                t.push(CellKind::Shell(ShellCell {
                                    command,
                                    output,
                                    exit_code,
                                    running: false,
                                    duration_ms: None,
                                    expanded: false,
                                }));
                            }
                        }
                        ContentBlock::Text { text: s, .. } => {
                            if !text.is_empty() {
                                text.push_str("\n\n");
                            }
                            text.push_str(s);
                        }
                        ContentBlock::Image { .. } => text.push_str("[image]"),
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                            ..
                        } => {
                            if let Some(cell) = t.tool_mut(tool_use_id) {
                                // The transcript keeps the model's view; the cell shows the result.
                                cell.output = crate::types::untrusted::body(&content.as_text()).to_string();
                                cell.status = if *is_error { ToolStatus::Error } else { ToolStatus::Ok };
                            }
                        }
                        _ => {}
                    }
                }
                if !text.trim().is_empty() {
                    t.push(CellKind::User { text });
                }
                for a in attached {
                    t.push(CellKind::Notice {
                        level: NoticeLevel::Info,
                        text: a,
                    });
                }
            }
            Role::Assistant => {
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                            t.push(CellKind::Assistant {
                                text: text.clone(),
                                streaming: false,
                            });
                        }
                        ContentBlock::Thinking { thinking, .. } => {
                            t.push(CellKind::Thinking {
                                text: thinking.clone(),
                                streaming: false,
                            });
                        }
                        ContentBlock::ToolUse { id, name, input } => {
                            let mut cell = ToolCell::new(id, name, input.clone(), cwd);
                            // Until its result is seen: the transcript repair gives every call one.
                            cell.status = ToolStatus::Interrupted;
                            t.push(CellKind::Tool(Box::new(cell)));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::message::ToolResultContent;
    use serde_json::json;

    #[test]
    fn pairs_tool_calls_with_their_results() {
        let history = vec![
            Message::user_text("find it"),
            Message::assistant(vec![
                ContentBlock::text("Looking."),
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "Glob".into(),
                    input: json!({"pattern": "*.rs"}),
                },
            ]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(
                    "t1",
                    ToolResultContent::Text("a.rs".into()),
                    false,
                )],
            },
            Message::assistant(vec![ContentBlock::text("Found a.rs.")]),
            Message::user_text(format!(
                "{} Before you finish, the evidence ledger shows:\n- No test run is recorded.",
                gate::LEAD
            )),
            Message::assistant(vec![ContentBlock::text("Not verified.")]),
            Message::user_text(INTERRUPTED),
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::text(shell::context_text(
                        "ls",
                        &shell::ShellResult {
                            output: "a.rs\n".into(),
                            exit_code: Some(0),
                            duration_ms: 1,
                            interrupted: false,
                            dropped: 0,
                            spawn_error: None,
                        },
                    )),
                    ContentBlock::text("explain @a.rs"),
                    ContentBlock::text(format!(
                        "{}file /w/a.rs (1 lines):\n     1\tfn a() {{}}\n",
                        mentions::ATTACHMENT_LEAD
                    )),
                ],
            },
        ];
        let mut t = Transcript::default();
        fill(&mut t, &history, Path::new("/w"));
        let kinds: Vec<String> = t
            .cells()
            .map(|c| match c {
                CellKind::User { text } => format!("user:{text}"),
                CellKind::Assistant { text, .. } => format!("assistant:{text}"),
                CellKind::Tool(tc) => format!("tool:{}:{:?}:{}", tc.name, tc.status, tc.output),
                CellKind::Notice { text, .. } => format!("notice:{text}"),
                CellKind::Shell(sh) => format!("shell:{}:{}:{:?}", sh.command, sh.output, sh.exit_code),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "user:find it",
                "assistant:Looking.",
                "tool:Glob:Ok:a.rs",
                "assistant:Found a.rs.",
                "notice:verification: the model was sent back to verify its changes",
                "assistant:Not verified.",
                "notice:Interrupted",
                "shell:ls:a.rs:Some(0)",
                "user:explain @a.rs",
                "notice:attached file /w/a.rs (1 lines)",
            ]
        );
    }
}
