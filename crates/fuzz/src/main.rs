//! `regen-fuzz --execs N --seed S [--threads T] [--findings DIR]`: a long fuzz run, reporting
//! executions, executions per second and findings (each written to DIR as the header, its
//! regen.toml and what was found); `--replay I` re-runs execution I of seed S and prints it.
//! Exit status: 0 without findings, 1 with, 2 on usage errors.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use regen_fuzz::{Corpus, Found, exec, input, run};

const USAGE: &str = "usage: regen-fuzz [--execs N] [--seed S] [--threads T] [--findings DIR] [--replay I]";

struct Args {
    execs: u64,
    seed: u64,
    threads: usize,
    findings: PathBuf,
    replay: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        execs: 100_000,
        seed: 1,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        findings: PathBuf::from("target/fuzz-findings"),
        replay: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        let number = |v: String| v.replace('_', "").parse::<u64>().map_err(|e| format!("{v}: {e}\n{USAGE}"));
        match flag.as_str() {
            "--execs" => args.execs = number(value()?)?,
            "--seed" => args.seed = number(value()?)?,
            "--threads" => args.threads = number(value()?)? as usize,
            "--findings" => args.findings = PathBuf::from(value()?),
            "--replay" => args.replay = Some(number(value()?)?),
            _ => return Err(USAGE.into()),
        }
    }
    Ok(args)
}

fn show(found: &Found, seed: u64) -> String {
    let mut s = format!(
        "finding ({} execution(s) alike), first at execution {} of seed {seed}: {}\n  {}\n  replay: cargo run --release -p regen-fuzz -- --seed {seed} --replay {}\n",
        found.count,
        found.index,
        found.finding.kind,
        found.finding.message.replace('\n', "\n  "),
        found.index
    );
    s.push_str(&format!("  header: {:?}\n", String::from_utf8_lossy(&found.input.header)));
    if let Some(c) = &found.input.config {
        s.push_str(&format!("  config: {c:?}\n"));
    }
    s
}

fn write_finding(dir: &std::path::Path, seed: u64, found: &Found) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let stem = dir.join(format!("seed{seed}-exec{}", found.index));
    std::fs::write(stem.with_extension("h"), &found.input.header)?;
    std::fs::write(stem.with_extension("old.h"), &found.input.old)?;
    if let Some(c) = &found.input.config {
        std::fs::write(stem.with_extension("toml"), c)?;
    }
    std::fs::write(stem.with_extension("txt"), show(found, seed))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let corpus = match Corpus::load(&Corpus::fixtures_dir()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("regen-fuzz: cannot read the fixture headers: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(index) = args.replay {
        let input = input(&corpus, args.seed, index);
        println!("header:\n{}", String::from_utf8_lossy(&input.header));
        if let Some(c) = &input.config {
            println!("config:\n{c}");
        }
        println!("result: {:?}", exec(&input));
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "regen-fuzz: seed {}, {} executions on {} thread(s), {} corpus lines",
        args.seed,
        args.execs,
        args.threads,
        corpus.decls.len()
    );
    let report = run(&corpus, args.seed, args.execs, args.threads, Duration::from_secs(30), &|done, r| {
        eprintln!("regen-fuzz: {done} executions, {:.0}/s, {} finding(s)", r.execs_per_sec(), r.findings.len());
    });
    for found in &report.findings {
        print!("{}", show(found, args.seed));
        if let Err(e) = write_finding(&args.findings, args.seed, found) {
            eprintln!("regen-fuzz: cannot write {}: {e}", args.findings.display());
        }
    }
    if std::env::var_os("REGEN_FUZZ_REJECTIONS").is_some() {
        let mut by_count: Vec<(&String, &u64)> = report.rejections.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1));
        for (shape, n) in by_count {
            println!("{n:>9}  {shape}");
        }
    }
    println!("regen-fuzz: seed {}: {}", args.seed, report.summary());
    if report.findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
