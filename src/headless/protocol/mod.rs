//! The control protocol of programs that drive keel (the Agent SDKs): a codec between lines
//! and typed messages, keel's requests to the client (and the relay of the client's in-process
//! MCP servers), and the client's requests applied to the engine. The engine knows nothing of it: it sees hook callbacks and permission answers.

pub mod client;
pub mod codec;
pub mod control;
pub mod elicitation;
pub mod mcp_relay;
pub mod offer;
pub mod snapshot;
