//! Elicitation requests from MCP servers in the TUI: a form over the transcript, one row per
//! field of the server's flat schema (text, number, integer, boolean, choice), filled with the
//! schema's defaults. Enter sends it (after checking the types and required fields), Esc
//! declines, Ctrl+C cancels. Like the approval dialog it takes keys only after a quiet moment,
//! so text typed ahead goes to the prompt box and never into a server's form. A URL request
//! shows the address; Enter accepts (the user will visit it), Esc declines.

use std::collections::VecDeque;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::{mpsc::UnboundedSender, oneshot};

use super::worker::Reply;
use crate::mcp::elicit::{Answer, Elicitor, Request};

/// Sends each request to the interface and waits for the user's answer; an interface that
/// is gone declines.
pub struct TuiElicitor {
    pub replies: UnboundedSender<Reply>,
}

/// One request on its way to the interface.
pub struct FormPrompt {
    pub request: Request,
    pub reply: oneshot::Sender<Answer>,
}

impl std::fmt::Debug for FormPrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormPrompt").field("request", &self.request).finish()
    }
}

impl Elicitor for TuiElicitor {
    fn elicit(&self, request: Request) -> BoxFuture<'static, Answer> {
        let (tx, rx) = oneshot::channel();
        let sent = self.replies.send(Reply::Elicitation(FormPrompt { request, reply: tx }));
        Box::pin(async move {
            if sent.is_err() {
                return Answer::Decline;
            }
            rx.await.unwrap_or(Answer::Decline)
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    Choice(Vec<String>),
}

#[derive(Debug)]
pub struct Field {
    pub name: String,
    pub title: String,
    pub description: String,
    pub kind: Kind,
    pub required: bool,
    /// What the row shows and what is sent (parsed by kind).
    pub value: String,
}

/// The form on screen.
#[derive(Debug)]
pub struct Form {
    pub server: String,
    pub message: String,
    pub url: Option<String>,
    pub fields: Vec<Field>,
    pub focus: usize,
    /// Why Enter did not send (a required field is empty, a number does not parse).
    pub error: Option<String>,
    opened: Instant,
    reply: Option<oneshot::Sender<Answer>>,
}

/// The open form and the requests waiting behind it.
#[derive(Debug, Default)]
pub struct Forms {
    pub open: Option<Form>,
    waiting: VecDeque<FormPrompt>,
}

impl Forms {
    pub fn push(&mut self, prompt: FormPrompt, now: Instant) {
        if self.open.is_none() {
            self.open = Some(Form::new(prompt, now));
        } else {
            self.waiting.push_back(prompt);
        }
    }

    /// Gives the key to the open form. `false`: no form, or it is not taking keys yet.
    pub fn key(&mut self, key: KeyEvent, now: Instant) -> bool {
        let Some(form) = self.open.as_mut() else {
            return false;
        };
        if now.duration_since(form.opened) < crate::tui::app::GRACE {
            return false;
        }
        if let Some(answer) = form.key(key) {
            form.answer(answer);
            self.open = self.waiting.pop_front().map(|p| Form::new(p, now));
        }
        true
    }
}

impl Drop for Form {
    fn drop(&mut self) {
        // A form closed without an answer (the interface is leaving) declines.
        self.answer(Answer::Decline);
    }
}

impl Form {
    pub fn new(prompt: FormPrompt, now: Instant) -> Form {
        let FormPrompt { request, reply } = prompt;
        let fields = request
            .fields()
            .into_iter()
            .map(|(name, schema, required)| field(name, &schema, required))
            .collect();
        Form {
            server: request.server.clone(),
            message: request.message.clone(),
            url: request.url.clone(),
            fields,
            focus: 0,
            error: None,
            opened: now,
            reply: Some(reply),
        }
    }

    fn answer(&mut self, answer: Answer) {
        if let Some(tx) = self.reply.take() {
            let _ = tx.send(answer);
        }
    }

    /// One key; `Some` when the form is done.
    fn key(&mut self, key: KeyEvent) -> Option<Answer> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => return Some(Answer::Cancel),
            KeyCode::Esc => return Some(Answer::Decline),
            KeyCode::Enter => {
                return match self.content() {
                    Ok(content) => Some(Answer::Accept(content)),
                    Err(e) => {
                        self.error = Some(e);
                        None
                    }
                };
            }
            KeyCode::Tab | KeyCode::Down if !self.fields.is_empty() => {
                self.focus = (self.focus + 1) % self.fields.len();
            }
            KeyCode::BackTab | KeyCode::Up if !self.fields.is_empty() => {
                self.focus = (self.focus + self.fields.len() - 1) % self.fields.len();
            }
            _ => {
                if let Some(f) = self.fields.get_mut(self.focus) {
                    f.edit(key);
                }
            }
        }
        None
    }

    /// The answer's content, or what is wrong with the form.
    pub fn content(&self) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for f in &self.fields {
            let raw = f.value.trim();
            if raw.is_empty() {
                if f.required {
                    return Err(format!("`{}` is required", f.title));
                }
                continue;
            }
            let value = match &f.kind {
                Kind::Text | Kind::Choice(_) => Value::String(raw.to_string()),
                Kind::Boolean => Value::Bool(raw == "yes"),
                Kind::Integer => raw
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| format!("`{}` must be a whole number", f.title))?,
                Kind::Number => raw
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("`{}` must be a number", f.title))?,
            };
            out.insert(f.name.clone(), value);
        }
        Ok(out)
    }
}

impl Field {
    fn edit(&mut self, key: KeyEvent) {
        match (&self.kind, key.code) {
            (Kind::Boolean, KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right) => {
                self.value = if self.value == "yes" { "no" } else { "yes" }.to_string();
            }
            (Kind::Choice(options), KeyCode::Char(' ') | KeyCode::Right | KeyCode::Left) if !options.is_empty() => {
                let at = options.iter().position(|o| *o == self.value);
                let next = match (at, key.code) {
                    (None, _) => 0,
                    (Some(i), KeyCode::Left) => (i + options.len() - 1) % options.len(),
                    (Some(i), _) => (i + 1) % options.len(),
                };
                self.value = options[next].clone();
            }
            (Kind::Text | Kind::Integer | Kind::Number, KeyCode::Backspace) => {
                self.value.pop();
            }
            (Kind::Text | Kind::Integer | Kind::Number, KeyCode::Char(c))
                if !key.modifiers.contains(KeyModifiers::CONTROL) && !c.is_control() =>
            {
                self.value.push(c);
            }
            _ => {}
        }
    }
}

fn field(name: String, schema: &Value, required: bool) -> Field {
    let text = |k: &str| schema.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let options: Option<Vec<String>> = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect());
    let kind = match (options, schema.get("type").and_then(Value::as_str)) {
        (Some(o), _) => Kind::Choice(o),
        (None, Some("boolean")) => Kind::Boolean,
        (None, Some("integer")) => Kind::Integer,
        (None, Some("number")) => Kind::Number,
        _ => Kind::Text,
    };
    let value = match schema.get("default") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "yes" } else { "no" }.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ if kind == Kind::Boolean => "no".to_string(),
        _ => String::new(),
    };
    let title = match text("title") {
        t if t.is_empty() => name.clone(),
        t => t,
    };
    Field {
        name,
        title,
        description: text("description"),
        kind,
        required,
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn prompt(schema: Value) -> (FormPrompt, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        let request = Request::from_params("srv", &json!({"message": "Who?", "requestedSchema": schema}));
        (FormPrompt { request, reply: tx }, rx)
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn schema() -> Value {
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "title": "Name"},
            "count": {"type": "integer", "default": 3},
            "ok": {"type": "boolean"},
            "size": {"type": "string", "enum": ["s", "m", "l"], "default": "m"}}})
    }

    #[test]
    fn typed_ahead_keys_do_not_reach_the_form_and_a_filled_form_is_sent() {
        let t0 = Instant::now();
        let mut forms = Forms::default();
        let (p, mut rx) = prompt(schema());
        forms.push(p, t0);
        assert!(!forms.key(key(KeyCode::Char('x')), t0), "within the grace time");
        let t = t0 + Duration::from_secs(1);
        // Enter with the required name empty: an error, nothing sent.
        assert!(forms.key(key(KeyCode::Enter), t));
        assert_eq!(
            forms.open.as_ref().unwrap().error.as_deref(),
            Some("`Name` is required")
        );
        for c in "Bo".chars() {
            forms.key(key(KeyCode::Char(c)), t);
        }
        forms.key(key(KeyCode::Tab), t);
        forms.key(key(KeyCode::Backspace), t);
        forms.key(key(KeyCode::Char('7')), t);
        forms.key(key(KeyCode::Tab), t);
        forms.key(key(KeyCode::Char(' ')), t);
        forms.key(key(KeyCode::Tab), t);
        forms.key(key(KeyCode::Right), t);
        forms.key(key(KeyCode::Enter), t);
        assert!(forms.open.is_none());
        assert_eq!(
            rx.try_recv().unwrap(),
            Answer::Accept(
                json!({"name": "Bo", "count": 7, "ok": true, "size": "l"})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
    }

    #[test]
    fn a_bad_number_is_refused_esc_declines_and_a_dropped_form_declines() {
        let t = Instant::now() + Duration::from_secs(1);
        let mut forms = Forms::default();
        let (p, mut rx) = prompt(json!({"properties": {"n": {"type": "number"}}}));
        forms.push(p, Instant::now() - Duration::from_secs(2));
        let (p2, mut rx2) = prompt(json!({"properties": {"n": {"type": "number"}}}));
        forms.push(p2, t);
        forms.key(key(KeyCode::Char('x')), t);
        forms.key(key(KeyCode::Enter), t);
        assert_eq!(
            forms.open.as_ref().unwrap().error.as_deref(),
            Some("`n` must be a number")
        );
        forms.key(key(KeyCode::Esc), t);
        assert_eq!(rx.try_recv().unwrap(), Answer::Decline);
        // The queued request is open now; the interface leaving declines it.
        assert!(forms.open.is_some());
        drop(forms);
        assert_eq!(rx2.try_recv().unwrap(), Answer::Decline);
    }
}
