//! `--fallback-model` / `fallbackModel`: a chain of up to three fallback models. When the model
//! in use is overloaded several times in a row, the request — and the rest of the session —
//! continues on the next model of the chain. After an unexpected error that retrying cannot
//! fix (a server error, a broken or malformed stream), the request is sent once more on the
//! next model; the session stays where it was. The output says so each time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ModelRequest, Provider, ProviderError, ProviderEvent, ProviderStream, channel_stream};

/// The most fallback models a chain may hold.
pub const MAX_FALLBACKS: usize = 3;

/// The models of a `--fallback-model` value or `fallbackModel` setting, in order: a
/// comma-separated list (`sonnet,haiku`).
pub fn chain(spec: &str) -> Vec<String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A provider and the model id to send it.
#[derive(Clone)]
pub struct Route {
    pub provider: Arc<dyn Provider>,
    pub model: String,
    /// The fallback's output limit (a request for the main model may ask for more).
    pub max_output: u32,
}

impl Route {
    /// The request as the fallback model gets it.
    fn adapt(&self, mut request: ModelRequest) -> ModelRequest {
        request.model = self.model.clone();
        request.max_tokens = request.max_tokens.min(self.max_output.max(1));
        request
    }
}

pub struct FallbackProvider {
    primary: Arc<dyn Provider>,
    chain: Arc<Vec<Route>>,
    /// How far down the chain the session went: 0 is the main model, `i` is `chain[i - 1]`.
    active: Arc<AtomicUsize>,
}

/// Errors after which the request is sent once more on the next model: failures of the
/// server or the stream that nothing in the request explains. Authentication, a rejected
/// request (4xx), an unreachable server, a cancelled request are not.
fn unexpected(e: &ProviderError) -> bool {
    match e {
        ProviderError::ServerError(_) | ProviderError::Stream(_) | ProviderError::BadResponse(_) => true,
        ProviderError::Rejected { status, .. } => *status >= 500,
        ProviderError::RetriesExhausted { overloaded, .. } => !overloaded,
        _ => false,
    }
}

/// Events that show the consumer part of an answer: after one, sending the request again
/// would repeat it.
fn is_content(event: &ProviderEvent) -> bool {
    !matches!(event, ProviderEvent::Notice(_) | ProviderEvent::Retry { .. })
}

impl FallbackProvider {
    /// Every provider of the chain but the last must give up with
    /// [`ProviderError::Overloaded`] after repeated overloads (its retry policy's
    /// `overloads_before_fallback`).
    pub fn new(primary: Arc<dyn Provider>, chain: Vec<Route>) -> FallbackProvider {
        FallbackProvider {
            primary,
            chain: Arc::new(chain),
            active: Arc::default(),
        }
    }

    pub fn switched(&self) -> bool {
        self.active.load(Ordering::SeqCst) > 0
    }
}

/// Streams `request` on step `at` of the chain (0: the main model).
fn open(
    primary: &Arc<dyn Provider>,
    chain: &[Route],
    at: usize,
    request: ModelRequest,
    cancel: CancellationToken,
) -> ProviderStream {
    match at.checked_sub(1).and_then(|i| chain.get(i)) {
        Some(route) => route.provider.stream(route.adapt(request), cancel),
        None => primary.stream(request, cancel),
    }
}

fn model_at(chain: &[Route], at: usize, request: &ModelRequest) -> String {
    match at.checked_sub(1).and_then(|i| chain.get(i)) {
        Some(route) => route.model.clone(),
        None => request.model.clone(),
    }
}

impl Provider for FallbackProvider {
    fn name(&self) -> &str {
        self.primary.name()
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ProviderStream {
        let (tx, rx) = mpsc::channel(256);
        let primary = self.primary.clone();
        let chain = self.chain.clone();
        let active = self.active.clone();
        tokio::spawn(async move {
            let mut at = active.load(Ordering::SeqCst);
            let mut retried = false;
            let mut stream = open(&primary, &chain, at, request.clone(), cancel.clone());
            // Kept for a switch or the one retry until the stream ends; then let go of before
            // the last item is handed over, so the engine appends to the history without a copy.
            let mut request = Some(request);
            // Part of an answer reached the consumer since the last retry (which voids it):
            // sending the request again now would repeat it.
            let mut streamed = false;
            while let Some(item) = stream.next().await {
                let next = at + 1;
                let can_move = next <= chain.len();
                match item {
                    Err(ProviderError::Overloaded { attempts, message }) if can_move => {
                        let Some(req) = request.as_ref() else { return };
                        let note = format!(
                            "{} is overloaded ({attempts} errors in a row, last: {message}); continuing on the \
                             fallback model {}",
                            model_at(&chain, at, req),
                            model_at(&chain, next, req)
                        );
                        // Only forward: a parallel request may have gone further already.
                        active.fetch_max(next, Ordering::SeqCst);
                        if tx.send(Ok(ProviderEvent::Notice(note))).await.is_err() {
                            return;
                        }
                        at = next;
                        stream = open(&primary, &chain, at, req.clone(), cancel.clone());
                    }
                    Err(e) if can_move && !retried && !streamed && unexpected(&e) => {
                        let Some(req) = request.take() else { return };
                        retried = true;
                        let note = format!(
                            "{} failed ({e}); trying this request once on the fallback model {}",
                            model_at(&chain, at, &req),
                            model_at(&chain, next, &req)
                        );
                        if tx.send(Ok(ProviderEvent::Notice(note))).await.is_err() {
                            return;
                        }
                        at = next;
                        stream = open(&primary, &chain, at, req.clone(), cancel.clone());
                        request = Some(req);
                    }
                    other => {
                        let last = matches!(other, Ok(ProviderEvent::Completed(_)) | Err(_));
                        if last {
                            request = None;
                        }
                        match &other {
                            Ok(ProviderEvent::Retry { .. }) => streamed = false,
                            Ok(event) if is_content(event) => streamed = true,
                            _ => {}
                        }
                        if tx.send(other).await.is_err() || last {
                            return;
                        }
                    }
                }
            }
        });
        channel_stream(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_a_comma_separated_list() {
        assert_eq!(
            chain(" sonnet , haiku,,openai/gpt-4.1 "),
            ["sonnet", "haiku", "openai/gpt-4.1"]
        );
        assert!(chain(" , ").is_empty());
    }

    #[test]
    fn only_unexplained_failures_are_retried_on_the_fallback() {
        assert!(unexpected(&ProviderError::ServerError("boom".into())));
        assert!(unexpected(&ProviderError::Rejected {
            status: 500,
            message: String::new()
        }));
        assert!(!unexpected(&ProviderError::Rejected {
            status: 400,
            message: String::new()
        }));
        assert!(!unexpected(&ProviderError::Auth {
            status: 401,
            message: String::new()
        }));
        assert!(!unexpected(&ProviderError::Cancelled));
    }
}
