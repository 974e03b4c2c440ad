use std::process::ExitCode;

fn main() -> ExitCode {
    // Sandboxed commands re-enter keel as a helper before any thread exists.
    if let Some(code) = keel::sandbox::helper::run_if_requested() {
        return code;
    }
    keel::cli::main()
}
