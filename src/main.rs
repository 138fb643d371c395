//! Thin main: parse, set up logging, run, map the result to a documented exit code.

use clap::Parser;
use kubectl_etcd::cli::{Cli, LogFormat};

fn init_tracing(cli: &Cli) {
    // RUST_LOG wins; an empty one counts as unset (as a filter it would let only errors through).
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| tracing_subscriber::EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(cli.log_filter()));
    // Colours only for a person at a terminal: a pod's log, a CI job's or a pipe gets plain
    // text (`NO_COLOR` turns them off at a terminal too).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    match cli.global.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_target(false).init(),
    }
}

/// The stack of every runtime thread (see `main`).
const STACK_BYTES: usize = 8 << 20;

fn main() {
    let cli = Cli::parse();
    init_tracing(&cli);
    // Worker threads get the main thread's 8 MiB of stack, not tokio's 2 MiB: an engine pass is
    // one deep future (the recovery's above all, in a debug build), which the CLI polls on the
    // main thread but `operate` on a worker, where it overflowed the stack and aborted the
    // operator mid-recovery. Untouched stack costs no memory.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(STACK_BYTES)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(kubectl_etcd::error::exit::FAILURE);
        }
    };
    let code = match rt.block_on(kubectl_etcd::cli::run(cli)) {
        Ok(()) => kubectl_etcd::error::exit::OK,
        Err(e) => {
            eprintln!("error: {}", e.report());
            e.exit_code()
        }
    };
    // Port-forward tasks may still linger; don't wait for them (the result is printed, the
    // Lease released: what is left is closing connections, which the exit does).
    rt.shutdown_background();
    std::process::exit(code);
}
