//! A Jupyter notebook as JSON: finding cells by id, replacing, inserting and deleting them, and
//! writing the document back the way nbformat does (same indent, key order kept, unknown fields
//! untouched, trailing newline kept). Also the cell view Read shows of a notebook.

use serde::Serialize;
use serde_json::{Map, Value, json};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotebookError {
    #[error("is not a notebook: {0}")]
    NotANotebook(String),
    #[error(
        "has no cell with id \"{id}\". Its cell ids are: {known}. Read the notebook to see them (a cell \
         without an id is addressed as cell-N, N counting from 0)."
    )]
    UnknownCell { id: String, known: String },
    #[error("{0}")]
    BadEdit(String),
}

/// How the file was laid out, so a rewrite changes only the cells it edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// Spaces per level; `None` for a one-line document.
    indent: Option<usize>,
    trailing_newline: bool,
}

#[derive(Debug, Clone)]
pub struct Notebook {
    doc: Map<String, Value>,
    layout: Layout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    Code,
    Markdown,
}

impl CellKind {
    pub fn parse(s: &str) -> Option<CellKind> {
        match s {
            "code" => Some(CellKind::Code),
            "markdown" => Some(CellKind::Markdown),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            CellKind::Code => "code",
            CellKind::Markdown => "markdown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Replace,
    Insert,
    Delete,
}

/// What an edit did, for the tool's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    pub cell_id: String,
    pub index: usize,
    pub cell_type: String,
    /// A code cell whose old outputs were dropped (they belonged to the old source).
    pub cleared_outputs: bool,
}

impl Notebook {
    pub fn parse(bytes: &[u8]) -> Result<Notebook, NotebookError> {
        let text = std::str::from_utf8(bytes).map_err(|_| NotebookError::NotANotebook("it is not UTF-8".into()))?;
        let value: Value =
            serde_json::from_str(text).map_err(|e| NotebookError::NotANotebook(format!("invalid JSON ({e})")))?;
        let Value::Object(doc) = value else {
            return Err(NotebookError::NotANotebook("the document is not a JSON object".into()));
        };
        if !doc.get("cells").is_some_and(Value::is_array) {
            return Err(NotebookError::NotANotebook("it has no \"cells\" list".into()));
        }
        Ok(Notebook {
            doc,
            layout: layout_of(text),
        })
    }

    fn cells(&self) -> &[Value] {
        self.doc
            .get("cells")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn cells_mut(&mut self) -> Result<&mut Vec<Value>, NotebookError> {
        self.doc
            .get_mut("cells")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| NotebookError::NotANotebook("it has no \"cells\" list".into()))
    }

    /// Whether cells carry ids (nbformat 4.5 and later).
    fn wants_ids(&self) -> bool {
        let major = self.doc.get("nbformat").and_then(Value::as_u64).unwrap_or(4);
        let minor = self.doc.get("nbformat_minor").and_then(Value::as_u64).unwrap_or(0);
        major > 4 || (major == 4 && minor >= 5) || self.cells().iter().any(|c| c.get("id").is_some())
    }

    /// The kernel's language, when the metadata names it.
    pub fn language(&self) -> String {
        let meta = self.doc.get("metadata");
        meta.and_then(|m| m.pointer("/language_info/name"))
            .or_else(|| meta.and_then(|m| m.pointer("/kernelspec/language")))
            .and_then(Value::as_str)
            .unwrap_or("python")
            .to_string()
    }

    /// The id a cell is addressed by: its own, or `cell-N` for a cell without one.
    fn id_at(&self, index: usize) -> String {
        self.cells()
            .get(index)
            .and_then(|c| c.get("id"))
            .and_then(Value::as_str)
            .map_or_else(|| format!("cell-{index}"), str::to_string)
    }

    fn find(&self, id: &str) -> Result<usize, NotebookError> {
        let cells = self.cells();
        if let Some(i) = cells
            .iter()
            .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        {
            return Ok(i);
        }
        if let Some(n) = id.strip_prefix("cell-").and_then(|n| n.parse::<usize>().ok())
            && n < cells.len()
        {
            return Ok(n);
        }
        let mut known: Vec<String> = (0..cells.len().min(40)).map(|i| self.id_at(i)).collect();
        if cells.len() > 40 {
            known.push(format!("… ({} cells in all)", cells.len()));
        }
        let known = if known.is_empty() {
            "none (the notebook has no cells)".to_string()
        } else {
            known.join(", ")
        };
        Err(NotebookError::UnknownCell { id: id.into(), known })
    }

    pub fn edit(
        &mut self,
        mode: Mode,
        cell_id: Option<&str>,
        source: &str,
        kind: Option<CellKind>,
    ) -> Result<Done, NotebookError> {
        match mode {
            Mode::Replace => {
                let id = cell_id.ok_or_else(|| {
                    NotebookError::BadEdit(
                        "replacing a cell needs its cell_id; read the notebook to see the ids.".into(),
                    )
                })?;
                let index = self.find(id)?;
                let cell_id = self.id_at(index);
                let Some(Value::Object(cell)) = self.cells_mut()?.get_mut(index) else {
                    return Err(NotebookError::NotANotebook(format!(
                        "cell {index} is not a JSON object"
                    )));
                };
                let old_kind = cell
                    .get("cell_type")
                    .and_then(Value::as_str)
                    .unwrap_or("code")
                    .to_string();
                let new_kind = kind.map_or(old_kind.clone(), |k| k.as_str().to_string());
                cell.insert("source".into(), source_lines(source));
                let had_outputs = cell
                    .get("outputs")
                    .and_then(Value::as_array)
                    .is_some_and(|o| !o.is_empty());
                if new_kind == "code" {
                    cell.insert("outputs".into(), json!([]));
                    cell.insert("execution_count".into(), Value::Null);
                } else {
                    cell.remove("outputs");
                    cell.remove("execution_count");
                }
                cell.insert("cell_type".into(), Value::String(new_kind.clone()));
                Ok(Done {
                    cell_id,
                    index,
                    cell_type: new_kind,
                    cleared_outputs: had_outputs,
                })
            }
            Mode::Insert => {
                let kind = kind.ok_or_else(|| {
                    NotebookError::BadEdit("inserting a cell needs cell_type (\"code\" or \"markdown\").".into())
                })?;
                let index = match cell_id {
                    Some(id) => self.find(id)? + 1,
                    None => 0,
                };
                let new_id = self.wants_ids().then(|| self.fresh_id());
                let cell = new_cell(kind, source, new_id.as_deref());
                self.cells_mut()?.insert(index, cell);
                Ok(Done {
                    cell_id: self.id_at(index),
                    index,
                    cell_type: kind.as_str().into(),
                    cleared_outputs: false,
                })
            }
            Mode::Delete => {
                let id = cell_id.ok_or_else(|| {
                    NotebookError::BadEdit(
                        "deleting a cell needs its cell_id; read the notebook to see the ids.".into(),
                    )
                })?;
                let index = self.find(id)?;
                let cell_id = self.id_at(index);
                let removed = self.cells_mut()?.remove(index);
                Ok(Done {
                    cell_id,
                    index,
                    cell_type: removed
                        .get("cell_type")
                        .and_then(Value::as_str)
                        .unwrap_or("code")
                        .into(),
                    cleared_outputs: false,
                })
            }
        }
    }

    fn fresh_id(&self) -> String {
        loop {
            let id: String = uuid::Uuid::new_v4().simple().to_string().chars().take(8).collect();
            if !self
                .cells()
                .iter()
                .any(|c| c.get("id").and_then(Value::as_str) == Some(&id))
            {
                return id;
            }
        }
    }

    /// The document as nbformat would write it, in the file's own layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let doc = Value::Object(self.doc.clone());
        let written = match self.layout.indent {
            Some(n) => {
                let indent = vec![b' '; n];
                let fmt = serde_json::ser::PrettyFormatter::with_indent(&indent);
                let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
                doc.serialize(&mut ser)
            }
            None => serde_json::to_writer(&mut out, &doc),
        };
        // Serialising a Value into memory cannot fail.
        debug_assert!(written.is_ok());
        if self.layout.trailing_newline {
            out.push(b'\n');
        }
        out
    }

    /// The notebook as the model reads it: each cell with its id, type and source, then its
    /// outputs (text only, each capped).
    pub fn render(&self, path: &std::path::Path) -> String {
        const MAX_OUTPUT_CHARS: usize = 4_000;
        let cells = self.cells();
        let mut out = format!(
            "Notebook {} ({} cells, language {}). Cell ids below are what NotebookEdit's cell_id takes.\n",
            path.display(),
            cells.len(),
            self.language()
        );
        for (i, cell) in cells.iter().enumerate() {
            let kind = cell.get("cell_type").and_then(Value::as_str).unwrap_or("code");
            let count = match cell.get("execution_count") {
                Some(Value::Number(n)) => format!(" execution_count=\"{n}\""),
                _ => String::new(),
            };
            out.push_str(&format!("\n<cell id=\"{}\" type=\"{kind}\"{count}>\n", self.id_at(i)));
            let source = joined(cell.get("source"));
            out.push_str(&source);
            if !source.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("</cell>\n");
            let outputs = cell
                .get("outputs")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            if !outputs.is_empty() {
                let mut text = String::new();
                for o in outputs {
                    text.push_str(&render_output(o));
                }
                if text.chars().count() > MAX_OUTPUT_CHARS {
                    let cut: String = text.chars().take(MAX_OUTPUT_CHARS).collect();
                    text = format!("{cut}\n… (output cut at {MAX_OUTPUT_CHARS} characters)\n");
                }
                out.push_str("<outputs>\n");
                out.push_str(&text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str("</outputs>\n");
            }
        }
        out
    }
}

fn layout_of(text: &str) -> Layout {
    let trailing_newline = text.ends_with('\n');
    let indent = text
        .trim_start()
        .lines()
        .nth(1)
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .filter(|n| *n > 0);
    let multiline = text.trim_end().contains('\n');
    Layout {
        indent: match (multiline, indent) {
            (false, _) => None,
            (true, Some(n)) => Some(n),
            // A multi-line document without indentation is unusual; nbformat's own is 1.
            (true, None) => Some(1),
        },
        trailing_newline,
    }
}

/// Source as nbformat stores it: a list of lines, each but the last ending in a newline.
fn source_lines(source: &str) -> Value {
    Value::Array(source.split_inclusive('\n').map(|l| Value::String(l.into())).collect())
}

/// A multi-line string field (a string or a list of strings) as one string.
fn joined(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fn new_cell(kind: CellKind, source: &str, id: Option<&str>) -> Value {
    // Keys in nbformat's (sorted) order.
    let mut cell = Map::new();
    cell.insert("cell_type".into(), Value::String(kind.as_str().into()));
    if kind == CellKind::Code {
        cell.insert("execution_count".into(), Value::Null);
    }
    if let Some(id) = id {
        cell.insert("id".into(), Value::String(id.into()));
    }
    cell.insert("metadata".into(), json!({}));
    if kind == CellKind::Code {
        cell.insert("outputs".into(), json!([]));
    }
    cell.insert("source".into(), source_lines(source));
    Value::Object(cell)
}

fn render_output(o: &Value) -> String {
    match o.get("output_type").and_then(Value::as_str).unwrap_or("") {
        "stream" => joined(o.get("text")),
        "error" => {
            let name = o.get("ename").and_then(Value::as_str).unwrap_or("Error");
            let value = o.get("evalue").and_then(Value::as_str).unwrap_or("");
            format!("{name}: {value}\n")
        }
        _ => {
            let data = o.get("data").and_then(Value::as_object);
            match data.and_then(|d| d.get("text/plain")) {
                Some(t) => joined(Some(t)),
                None => {
                    let kinds: Vec<&str> = data.map(|d| d.keys().map(String::as_str).collect()).unwrap_or_default();
                    format!("[{} output not shown]\n", kinds.join(", "))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NB: &str = "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"intro\",\n   \"metadata\": {},\n   \"source\": [\n    \"# Title\"\n   ]\n  },\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 3,\n   \"id\": \"calc\",\n   \"metadata\": {\"x-custom\": true},\n   \"outputs\": [\n    {\n     \"name\": \"stdout\",\n     \"output_type\": \"stream\",\n     \"text\": [\n      \"2\\n\"\n     ]\n    }\n   ],\n   \"source\": [\n    \"print(1 + 1)\"\n   ]\n  }\n ],\n \"metadata\": {\"language_info\": {\"name\": \"python\"}, \"zz_unknown\": [1, 2]},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";

    fn nb() -> Notebook {
        Notebook::parse(NB.as_bytes()).unwrap()
    }

    #[test]
    fn unchanged_document_round_trips_in_nbformat_layout() {
        let canonical = nb().to_bytes();
        // Written with indent 1 and a trailing newline; a second round changes nothing.
        let again = Notebook::parse(&canonical).unwrap().to_bytes();
        assert_eq!(canonical, again);
        let text = String::from_utf8(canonical).unwrap();
        assert!(text.starts_with("{\n \"cells\": [\n  {\n   \"cell_type\""), "{text}");
        assert!(text.ends_with("}\n"));
        assert!(text.contains("\"zz_unknown\""), "{text}");
        assert!(text.contains("\"x-custom\": true"), "{text}");
    }

    #[test]
    fn replace_clears_outputs_and_keeps_the_rest() {
        let mut n = nb();
        let done = n.edit(Mode::Replace, Some("calc"), "x = 2\nprint(x)", None).unwrap();
        assert_eq!((done.index, done.cleared_outputs), (1, true));
        let v: Value = serde_json::from_slice(&n.to_bytes()).unwrap();
        assert_eq!(v["cells"][1]["source"], json!(["x = 2\n", "print(x)"]));
        assert_eq!(v["cells"][1]["outputs"], json!([]));
        assert_eq!(v["cells"][1]["execution_count"], Value::Null);
        assert_eq!(v["cells"][1]["metadata"], json!({"x-custom": true}));
        // Changing the type drops what only code cells have.
        n.edit(Mode::Replace, Some("calc"), "text", Some(CellKind::Markdown))
            .unwrap();
        let v: Value = serde_json::from_slice(&n.to_bytes()).unwrap();
        assert!(v["cells"][1].get("outputs").is_none());
        assert_eq!(v["cells"][1]["cell_type"], "markdown");
    }

    #[test]
    fn insert_after_a_cell_or_first_and_delete() {
        let mut n = nb();
        let done = n
            .edit(Mode::Insert, Some("intro"), "y = 1", Some(CellKind::Code))
            .unwrap();
        assert_eq!(done.index, 1);
        assert_eq!(done.cell_id.len(), 8);
        let first = n.edit(Mode::Insert, None, "# Top", Some(CellKind::Markdown)).unwrap();
        assert_eq!(first.index, 0);
        assert_eq!(n.cells().len(), 4);
        let new_id = done.cell_id.clone();
        let gone = n.edit(Mode::Delete, Some(&new_id), "", None).unwrap();
        assert_eq!(gone.index, 2);
        assert_eq!(n.cells().len(), 3);
        let err = n.edit(Mode::Insert, None, "z", None).unwrap_err();
        assert!(err.to_string().contains("cell_type"), "{err}");
    }

    #[test]
    fn unknown_ids_list_the_known_ones_and_index_ids_work_without_ids() {
        let err = nb().edit(Mode::Delete, Some("nope"), "", None).unwrap_err().to_string();
        assert!(err.contains("intro, calc"), "{err}");
        let old = r#"{"cells": [{"cell_type": "code", "source": "a", "metadata": {}, "outputs": []}], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}"#;
        let mut n = Notebook::parse(old.as_bytes()).unwrap();
        n.edit(Mode::Replace, Some("cell-0"), "b", None).unwrap();
        // A one-line document stays one line, and an old format gets no ids.
        n.edit(Mode::Insert, Some("cell-0"), "c", Some(CellKind::Code)).unwrap();
        let text = String::from_utf8(n.to_bytes()).unwrap();
        assert!(!text.contains('\n') && !text.contains("\"id\""), "{text}");
    }

    #[test]
    fn render_shows_ids_sources_and_outputs() {
        let text = nb().render(std::path::Path::new("/w/a.ipynb"));
        assert!(
            text.contains("<cell id=\"intro\" type=\"markdown\">\n# Title\n</cell>"),
            "{text}"
        );
        assert!(
            text.contains("<cell id=\"calc\" type=\"code\" execution_count=\"3\">"),
            "{text}"
        );
        assert!(text.contains("<outputs>\n2\n</outputs>"), "{text}");
    }

    #[test]
    fn not_a_notebook() {
        assert!(matches!(Notebook::parse(b"[1]"), Err(NotebookError::NotANotebook(_))));
        assert!(matches!(
            Notebook::parse(b"{\"a\":1}"),
            Err(NotebookError::NotANotebook(_))
        ));
    }
}
