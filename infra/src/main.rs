//! `holdfast-local run` serves the stack until Ctrl-C / SIGTERM;
//! `holdfast-local token --sub alice [--scope "stock:admin reservations:write"]` mints a token;
//! `holdfast-local sam-env …` creates the resources for `sam local` (see `sam.rs`).

use holdfast_local::{LocalStack, Options};
use std::path::PathBuf;
use std::time::Duration;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("token") => {
            let secret =
                std::env::var("LOCAL_JWT_SECRET").unwrap_or_else(|_| holdfast_local::auth::DEFAULT_SECRET.into());
            let sub = arg(&args, "--sub").unwrap_or_else(|| "alice".into());
            let scope = arg(&args, "--scope").unwrap_or_default();
            let scopes: Vec<&str> = scope.split_whitespace().collect();
            let ttl = arg(&args, "--ttl").and_then(|t| t.parse().ok()).unwrap_or(3600);
            println!("{}", holdfast_local::auth::mint(&secret, &sub, &scopes, ttl));
            Ok(())
        }
        Some("run") => run().await,
        Some("sam-env") => holdfast_local::sam::main(&args).await,
        _ => {
            eprintln!("usage: holdfast-local run | token --sub USER [--scope \"S1 S2\"] [--ttl SECONDS] | sam-env --endpoint URL --out FILE (see infra/src/sam.rs)");
            std::process::exit(2);
        }
    }
}

async fn run() -> anyhow::Result<()> {
    holdfast::telemetry::init_logs();
    let endpoint = std::env::var("HOLDFAST_EMULATOR_ENDPOINT").unwrap_or_else(|_| {
        format!("http://127.0.0.1:{}", std::env::var("HOLDFAST_EMULATOR_PORT").unwrap_or_else(|_| "4566".into()))
    });
    let template = PathBuf::from(std::env::var("HOLDFAST_TEMPLATE").unwrap_or_else(|_| "template.yaml".into()));
    let mut opts = Options::new(&endpoint, template);
    opts.port = std::env::var("HOLDFAST_LOCAL_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3000);
    opts.prefix = std::env::var("HOLDFAST_STACK_NAME").unwrap_or_else(|_| "holdfast".into());
    opts.inherit_env = true;
    // the template's parameters as a deployment would override them (the door's throttles and
    // reserved concurrency, docs/waiting-room.md); HOLDFAST_LOCAL_DOOR=0 lets everything in
    opts.parameters = holdfast_local::door::parse_overrides(&std::env::var("HOLDFAST_PARAMETERS").unwrap_or_default())?;
    opts.door = std::env::var("HOLDFAST_LOCAL_DOOR").as_deref() != Ok("0");
    let every = std::env::var("HOLDFAST_RECONCILE_INTERVAL_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    opts.schedule_every = Some(Duration::from_secs(every));
    let stack = LocalStack::start(opts).await?;
    eprintln!("holdfast local stack listening on {}", stack.base_url);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    eprintln!("stopping");
    stack.shutdown().await;
    Ok(())
}
