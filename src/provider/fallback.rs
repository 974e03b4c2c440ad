//! `--fallback-model`: when the main model is overloaded several times in a row, the request —
//! and the rest of the session — continues on the fallback model, and the output says so.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ModelRequest, Provider, ProviderError, ProviderEvent, ProviderStream, channel_stream};

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
    fallback: Route,
    /// Set once the fallback took over; later requests go straight to it.
    switched: Arc<AtomicBool>,
}

impl FallbackProvider {
    /// `primary` must give up with [`ProviderError::Overloaded`] after repeated overloads (its
    /// retry policy's `overloads_before_fallback`).
    pub fn new(primary: Arc<dyn Provider>, fallback: Route) -> FallbackProvider {
        FallbackProvider {
            primary,
            fallback,
            switched: Arc::default(),
        }
    }

    pub fn switched(&self) -> bool {
        self.switched.load(Ordering::SeqCst)
    }
}

impl Provider for FallbackProvider {
    fn name(&self) -> &str {
        self.primary.name()
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ProviderStream {
        let fallback = self.fallback.clone();
        if self.switched() {
            return fallback.provider.stream(fallback.adapt(request), cancel);
        }
        let (tx, rx) = mpsc::channel(256);
        let primary = self.primary.clone();
        let switched = self.switched.clone();
        tokio::spawn(async move {
            let mut stream = primary.stream(request.clone(), cancel.clone());
            let mut request = Some(request);
            while let Some(item) = stream.next().await {
                match item {
                    Err(ProviderError::Overloaded { attempts, message }) => {
                        let Some(request) = request.take() else { return };
                        switched.store(true, Ordering::SeqCst);
                        let note = format!(
                            "{} is overloaded ({attempts} errors in a row, last: {message}); continuing on the \
                             fallback model {}",
                            request.model, fallback.model
                        );
                        if tx.send(Ok(ProviderEvent::Notice(note))).await.is_err() {
                            return;
                        }
                        let adapted = fallback.adapt(request);
                        let mut rest = fallback.provider.stream(adapted, cancel);
                        while let Some(item) = rest.next().await {
                            if tx.send(item).await.is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    other => {
                        // The response (or error) ends the stream: let go of the request before
                        // handing it over, so the engine appends to the history without a copy.
                        let last = matches!(other, Ok(ProviderEvent::Completed(_)) | Err(_));
                        if last {
                            request = None;
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
