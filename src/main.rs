use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match keel::cli::run().await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::from(1)
        }
    }
}
