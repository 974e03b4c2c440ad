//! End-to-end tests: the real `keel` binary against a scripted model server on loopback.

mod support;

mod bash;
mod demo;
mod edit_guards;
mod engine_loop;
mod headless;
mod provider;
