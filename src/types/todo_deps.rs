//! Dependencies between task-list entries: an entry with an `id` can be named in another's
//! `blockedBy` (it must be completed first) or name others in its own `blocks` (they wait for
//! it). Both spellings describe one relation; here it is resolved into, for each entry, the
//! entries it waits for.

use super::tool::{Todo, TodoStatus};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependencyError {
    #[error("two entries have the id \"{0}\"; ids must be unique")]
    DuplicateId(String),
    #[error("entry \"{entry}\" names \"{id}\" in {field}, but no entry has that id (ids: {known})")]
    UnknownId {
        entry: String,
        id: String,
        field: &'static str,
        known: String,
    },
    #[error("the dependencies form a cycle: {0}; no entry in it could ever start")]
    Cycle(String),
}

/// For each entry (by position), the positions of the entries it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependencies {
    waits_for: Vec<Vec<usize>>,
}

fn label(t: &Todo) -> String {
    t.id.clone().unwrap_or_else(|| t.content.clone())
}

impl Dependencies {
    /// Resolves `blockedBy` and `blocks`; an unknown or repeated id, or a cycle, is an error.
    pub fn resolve(todos: &[Todo]) -> Result<Dependencies, DependencyError> {
        let mut index = std::collections::HashMap::new();
        for (i, t) in todos.iter().enumerate() {
            if let Some(id) = &t.id
                && index.insert(id.as_str(), i).is_some()
            {
                return Err(DependencyError::DuplicateId(id.clone()));
            }
        }
        let known = || {
            let mut ids: Vec<&str> = todos.iter().filter_map(|t| t.id.as_deref()).collect();
            ids.truncate(30);
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        };
        let mut waits_for = vec![Vec::new(); todos.len()];
        for (i, t) in todos.iter().enumerate() {
            for (field, ids) in [("blockedBy", &t.blocked_by), ("blocks", &t.blocks)] {
                for id in ids {
                    let Some(&j) = index.get(id.as_str()) else {
                        return Err(DependencyError::UnknownId {
                            entry: label(t),
                            id: id.clone(),
                            field,
                            known: known(),
                        });
                    };
                    let (waiter, first) = if field == "blockedBy" { (i, j) } else { (j, i) };
                    if !waits_for[waiter].contains(&first) {
                        waits_for[waiter].push(first);
                    }
                }
            }
        }
        let deps = Dependencies { waits_for };
        if let Some(cycle) = deps.find_cycle() {
            let names: Vec<String> = cycle.iter().map(|&i| label(&todos[i])).collect();
            return Err(DependencyError::Cycle(names.join(" → ")));
        }
        Ok(deps)
    }

    /// A cycle as positions (first repeated at the end), if any.
    fn find_cycle(&self) -> Option<Vec<usize>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let n = self.waits_for.len();
        let mut mark = vec![Mark::New; n];
        for start in 0..n {
            if mark[start] != Mark::New {
                continue;
            }
            // Iterative depth-first search: (node, next edge to follow).
            let mut stack = vec![(start, 0usize)];
            mark[start] = Mark::Open;
            while let Some(&mut (node, ref mut edge)) = stack.last_mut() {
                if let Some(&next) = self.waits_for[node].get(*edge) {
                    *edge += 1;
                    match mark[next] {
                        Mark::Open => {
                            let from = stack.iter().position(|(n, _)| *n == next).unwrap_or(0);
                            let mut cycle: Vec<usize> = stack[from..].iter().map(|(n, _)| *n).collect();
                            cycle.push(next);
                            return Some(cycle);
                        }
                        Mark::New => {
                            mark[next] = Mark::Open;
                            stack.push((next, 0));
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    stack.pop();
                }
            }
        }
        None
    }

    /// The entries `i` still waits for: those it depends on that are not completed.
    pub fn open_blockers<'a>(&self, todos: &'a [Todo], i: usize) -> Vec<&'a Todo> {
        self.waits_for
            .get(i)
            .map(|w| {
                w.iter()
                    .filter_map(|&j| todos.get(j))
                    .filter(|t| t.status != TodoStatus::Completed)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn is_blocked(&self, todos: &[Todo], i: usize) -> bool {
        !self.open_blockers(todos, i).is_empty()
    }
}

impl Todo {
    /// The entries this one still waits for, named for a person ("fix, docs"); empty when it
    /// waits for nothing or the list is inconsistent.
    pub fn blocked_on(&self, todos: &[Todo]) -> String {
        let Ok(deps) = Dependencies::resolve(todos) else {
            return String::new();
        };
        let Some(i) = todos.iter().position(|t| std::ptr::eq(t, self) || t == self) else {
            return String::new();
        };
        let names: Vec<String> = deps.open_blockers(todos, i).iter().map(|t| label(t)).collect();
        names.join(", ")
    }
}

/// The label an entry is named by in notes: its id, else its text.
pub fn todo_label(t: &Todo) -> String {
    label(t)
}

/// Which entries are blocked now (by position), for front ends; an inconsistent list (which
/// TodoWrite refuses) blocks nothing.
pub fn blocked_flags(todos: &[Todo]) -> Vec<bool> {
    match Dependencies::resolve(todos) {
        Ok(d) => (0..todos.len()).map(|i| d.is_blocked(todos, i)).collect(),
        Err(_) => vec![false; todos.len()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(id: &str, status: TodoStatus, blocked_by: &[&str], blocks: &[&str]) -> Todo {
        Todo {
            id: Some(id.into()),
            content: format!("do {id}"),
            status,
            active_form: format!("doing {id}"),
            blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
            blocks: blocks.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn both_spellings_make_one_relation() {
        let list = [
            todo("a", TodoStatus::Completed, &[], &["c"]),
            todo("b", TodoStatus::Pending, &[], &[]),
            todo("c", TodoStatus::Pending, &["b"], &[]),
        ];
        let d = Dependencies::resolve(&list).unwrap();
        let open: Vec<&str> = d
            .open_blockers(&list, 2)
            .iter()
            .map(|t| t.id.as_deref().unwrap())
            .collect();
        assert_eq!(open, ["b"], "a is completed, b is not");
        assert_eq!(blocked_flags(&list), [false, false, true]);
    }

    #[test]
    fn unknown_duplicate_and_cyclic_ids_are_errors() {
        let unknown = [todo("a", TodoStatus::Pending, &["zz"], &[])];
        let err = Dependencies::resolve(&unknown).unwrap_err().to_string();
        assert!(err.contains("\"zz\"") && err.contains("ids: a"), "{err}");
        let dup = [
            todo("a", TodoStatus::Pending, &[], &[]),
            todo("a", TodoStatus::Pending, &[], &[]),
        ];
        assert_eq!(
            Dependencies::resolve(&dup).unwrap_err(),
            DependencyError::DuplicateId("a".into())
        );
        let cycle = [
            todo("a", TodoStatus::Pending, &["c"], &[]),
            todo("b", TodoStatus::Pending, &["a"], &["c"]),
            todo("c", TodoStatus::Pending, &[], &[]),
        ];
        let err = Dependencies::resolve(&cycle).unwrap_err().to_string();
        assert!(err.contains("cycle") && err.contains("a → c → b → a"), "{err}");
        let own = [todo("a", TodoStatus::Pending, &["a"], &[])];
        assert!(matches!(Dependencies::resolve(&own), Err(DependencyError::Cycle(_))));
    }
}
