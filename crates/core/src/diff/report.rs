//! The diff as a report: a summary whose every count is the length of a list the report shows,
//! the verdict (exit status and why), and the text, Markdown and JSON renderings of them.

use serde::Serialize;

use super::{ArgChange, Diff, HeaderId, Sides};
use crate::diff::backend::BackendMode;

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For terminals, optionally coloured ([`Color`]).
    Text,
    /// For pull-request comments.
    Markdown,
    /// For tools: the diff's lists, the headers, the summary and the verdict.
    Json,
}

/// Whether a text report is coloured; Markdown and JSON never are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Plain,
    /// ANSI escapes (for a terminal).
    Ansi,
}

/// When `regen diff` exits 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// A kernel of the backend breaks (its Rust method changed, or it is gone), or generation
    /// with the config fails on the new header.
    #[default]
    Breaking,
    /// That, or the headers differ at all.
    Any,
    Never,
}

impl FailOn {
    /// The spelling of `--fail-on`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Breaking => "breaking",
            FailOn::Any => "any",
            FailOn::Never => "never",
        }
    }
}

/// The counts of the report: each is the length of one list of the diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub added: usize,
    pub added_required: usize,
    pub removed: usize,
    pub removed_required: usize,
    pub renamed: usize,
    /// Schema changes, and how many of them change the C++ signature and the Rust method.
    pub changed: usize,
    pub changed_cpp_signature: usize,
    pub changed_rust_signature: usize,
    /// C++ signature changes with the same schema, beyond spelling.
    pub cpp_changed: usize,
    /// Declarations re-spelled only (`cpp_changed` entries with `spelling_only`).
    pub cpp_respelled: usize,
    pub became_required: usize,
    pub no_longer_required: usize,
    pub dispatch_flipped: usize,
    pub backend: BackendSummary,
}

/// The counts of the backend's lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendSummary {
    pub kernels: Sides<usize>,
    pub breaks: usize,
    pub gone: usize,
    pub regenerate: usize,
    pub absent: usize,
    pub arrived: usize,
    pub newly_fallback: usize,
    pub newly_skipped: usize,
    pub errors: Sides<usize>,
}

/// Whether `regen diff` fails, and why, in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub exit: u8,
    pub fail_on: FailOn,
    /// The backend's kernels that break, sorted (whatever `fail_on`).
    pub breaking: Vec<String>,
    /// `exit N: why`, the report's last line.
    pub reason: String,
}

/// How many names a verdict spells out before `and N more`.
const NAMED: usize = 10;

impl Diff {
    pub fn summary(&self) -> Summary {
        let b = &self.backend;
        let respelled = self.cpp_changed.iter().filter(|c| c.spelling_only).count();
        Summary {
            added: self.added.len(),
            added_required: self.added_required.len(),
            removed: self.removed.len(),
            removed_required: self.removed_required.len(),
            renamed: self.renamed.len(),
            changed: self.changed.len(),
            changed_cpp_signature: self.changed.iter().filter(|c| c.cpp_signature_changed).count(),
            changed_rust_signature: self.changed.iter().filter(|c| c.rust_signature_changed).count(),
            cpp_changed: self.cpp_changed.len() - respelled,
            cpp_respelled: respelled,
            became_required: self.became_required.len(),
            no_longer_required: self.no_longer_required.len(),
            dispatch_flipped: self.dispatch_flipped.len(),
            backend: BackendSummary {
                kernels: b.kernels,
                breaks: b.breaks.len(),
                gone: b.gone.len(),
                regenerate: b.regenerate.len(),
                absent: b.absent.len(),
                arrived: b.arrived.len(),
                newly_fallback: b.newly_fallback.len(),
                newly_skipped: b.newly_skipped.len(),
                errors: Sides { old: b.errors.old.len(), new: b.errors.new.len() },
            },
        }
    }

    /// The release (or path) of a side, as the report names it.
    fn side_name(&self, new: bool) -> String {
        let id = self.headers.as_ref().map(|h| if new { &h.new } else { &h.old });
        id.map_or_else(|| if new { "the new header".into() } else { "the old header".into() }, |id| id.name().into())
    }

    fn config_name(&self) -> String {
        self.backend.config.clone().unwrap_or_else(|| "the default config".into())
    }

    pub fn verdict(&self, fail_on: FailOn) -> Verdict {
        let b = &self.backend;
        let breaking: Vec<String> = b.breaking_ops().into_iter().map(str::to_owned).collect();
        let mut problems = Vec::new();
        if !breaking.is_empty() {
            let names: Vec<&str> = breaking.iter().take(NAMED).map(String::as_str).collect();
            let more = breaking.len().saturating_sub(NAMED);
            let tail = if more > 0 { format!(", and {more} more") } else { String::new() };
            problems.push(format!("{} kernel(s) of your backend break: {}{tail}", breaking.len(), names.join(", ")));
        }
        if !b.errors.new.is_empty() {
            problems.push(format!(
                "generation with {} fails on {}: {} config error(s)",
                self.config_name(),
                self.side_name(true),
                b.errors.new.len()
            ));
        }
        let differs = !self.is_empty();
        let (exit, reason) = match fail_on {
            FailOn::Never if problems.is_empty() => (0, "--fail-on never (nothing of your backend breaks)".to_owned()),
            FailOn::Never => (0, format!("--fail-on never ({})", problems.join("; "))),
            _ if !problems.is_empty() => (1, problems.join("; ")),
            FailOn::Any if differs => {
                let s = self.summary();
                (
                    1,
                    format!(
                        "--fail-on any and the headers differ ({} added, {} removed, {} schema and {} C++ signature \
                         change(s), {} re-spelling(s), {} requirement and {} dispatch flip(s))",
                        s.added,
                        s.removed,
                        s.changed,
                        s.cpp_changed,
                        s.cpp_respelled,
                        s.became_required + s.no_longer_required,
                        s.dispatch_flipped
                    ),
                )
            }
            FailOn::Any => (0, "the headers declare the same ops, schemas, C++ signatures and flags".to_owned()),
            FailOn::Breaking => {
                let regen = if b.regenerate.is_empty() {
                    String::new()
                } else {
                    format!(" ({} only need regenerating)", b.regenerate.len())
                };
                (
                    0,
                    format!(
                        "none of your backend's {} kernel(s) breaks{regen} and {} generates for {}",
                        b.kernels.old,
                        self.config_name(),
                        self.side_name(true)
                    ),
                )
            }
        };
        Verdict { exit, fail_on, breaking, reason: format!("exit {exit}: {reason}") }
    }

    /// The report in `format`; its last line (a field in JSON) is the verdict for `fail_on`.
    pub fn render(&self, format: Format, color: Color, fail_on: FailOn) -> String {
        match format {
            Format::Json => self.to_json(fail_on),
            Format::Markdown => Writer { style: Style::Markdown, out: String::new() }.report(self, fail_on),
            Format::Text => Writer { style: Style::Text(color), out: String::new() }.report(self, fail_on),
        }
    }

    fn to_json(&self, fail_on: FailOn) -> String {
        #[derive(Serialize)]
        struct Json<'a> {
            old: Option<&'a HeaderId>,
            new: Option<&'a HeaderId>,
            summary: Summary,
            verdict: Verdict,
            #[serde(flatten)]
            diff: &'a Diff,
        }
        let json = Json {
            old: self.headers.as_ref().map(|h| &h.old),
            new: self.headers.as_ref().map(|h| &h.new),
            summary: self.summary(),
            verdict: self.verdict(fail_on),
            diff: self,
        };
        let mut text = serde_json::to_string_pretty(&json).expect("the diff serializes");
        text.push('\n');
        text
    }
}

/// The prose formats: text (coloured or not) and Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Text(Color),
    Markdown,
}

/// Writes a text or Markdown report.
struct Writer {
    style: Style,
    out: String,
}

impl Writer {
    fn markdown(&self) -> bool {
        self.style == Style::Markdown
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.style == Style::Text(Color::Ansi) { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_owned() }
    }

    fn code(&self, s: &str) -> String {
        if self.markdown() { format!("`{s}`") } else { s.to_owned() }
    }

    fn line(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn heading(&mut self, title: &str, n: usize) {
        let text = if self.markdown() {
            format!("\n### {title} ({n})\n")
        } else {
            format!("\n{}", self.paint("1", &format!("{title} ({n})")))
        };
        self.line(&text);
    }

    fn item(&mut self, s: &str) {
        let text = if self.markdown() { format!("- {s}") } else { format!("  {s}") };
        self.line(&text);
    }

    /// An item led by a tag the summary counts (`BREAKS`, `REGEN`, ...).
    fn tagged(&mut self, tag: &str, colour: &str, s: &str) {
        let tag = if self.markdown() { format!("**{tag}**") } else { self.paint(colour, tag) };
        self.item(&format!("{tag} {s}"));
    }

    fn list(&mut self, title: &str, keys: &[String], mark: impl Fn(&str) -> bool, note: &str) {
        if keys.is_empty() {
            return;
        }
        self.heading(title, keys.len());
        for k in keys {
            let suffix = if mark(k) { format!(" ({note})") } else { String::new() };
            let text = format!("{}{suffix}", self.code(k));
            self.item(&text);
        }
    }

    fn report(mut self, d: &Diff, fail_on: FailOn) -> String {
        let s = d.summary();
        self.overview(d, &s);
        self.backend_items(d, &s);
        self.header_changes(d, &s);
        self.line("");
        let verdict = d.verdict(fail_on);
        self.line(&verdict.reason);
        self.out
    }

    /// The title, the two headers, the backend, and the one-line counts of both.
    fn overview(&mut self, d: &Diff, s: &Summary) {
        let b = &d.backend;
        let (old, new) = (d.side_name(false), d.side_name(true));
        let arrow = if self.markdown() { "→" } else { "->" };
        let title = format!("regen diff: {old} {arrow} {new}");
        self.line(&if self.markdown() { format!("## {title}\n") } else { title });
        if let Some(h) = &d.headers {
            for (side, id) in [("old", &h.old), ("new", &h.new)] {
                let release = id.release.as_ref().map(|r| format!("torch {r}, ")).unwrap_or_default();
                let text = format!("{side}: {} ({release}sha256 {})", self.code(&id.path), &id.sha256);
                self.item(&text);
            }
        }
        let mode = match b.mode {
            BackendMode::Skeleton => "every required op registered, as a skeleton",
            BackendMode::Implement => "the ops of `implement` registered",
        };
        let text = format!(
            "backend: {} ({mode}; fallback {}): {} kernel(s) in {old}, {} in {new}",
            d.backend.config.as_deref().map_or_else(|| "the default config".to_owned(), |c| self.code(c)),
            b.fallback,
            b.kernels.old,
            b.kernels.new
        );
        self.item(&text);
        if self.markdown() {
            self.line("");
        }
        let header_summary = format!(
            "header: {} added ({} required), {} removed ({} required), {} likely renamed, {} schema change(s) \
             ({} of the C++ signature, {} of the Rust method), {} C++ signature change(s) with the same schema, \
             {} re-spelling(s), {} became required, {} no longer required, {} dispatch flip(s)",
            s.added,
            s.added_required,
            s.removed,
            s.removed_required,
            s.renamed,
            s.changed,
            s.changed_cpp_signature,
            s.changed_rust_signature,
            s.cpp_changed,
            s.cpp_respelled,
            s.became_required,
            s.no_longer_required,
            s.dispatch_flipped
        );
        self.line(&header_summary);
        let bs = &s.backend;
        let old_errors = if bs.errors.old > 0 { format!(" (and {} on {old})", bs.errors.old) } else { String::new() };
        let backend_summary = format!(
            "your backend: {} BREAKS, {} GONE, {} REGEN, {} ABSENT, {} NEW, {} FALLBACK, {} SKIPPED, {} CONFIG \
             error(s) on {new}{old_errors}",
            bs.breaks,
            bs.gone,
            bs.regenerate,
            bs.absent,
            bs.arrived,
            bs.newly_fallback,
            bs.newly_skipped,
            bs.errors.new
        );
        if self.markdown() {
            self.line("");
        }
        self.line(&backend_summary);
    }

    /// What the change means for the backend, one tagged item per op (`BREAKS`, `GONE`, ...), and
    /// the config's errors.
    fn backend_items(&mut self, d: &Diff, s: &Summary) {
        let (b, bs) = (&d.backend, &s.backend);
        let (old, new) = (d.side_name(false), d.side_name(true));
        let arrow = if self.markdown() { "→" } else { "->" };
        let tagged = bs.breaks
            + bs.gone
            + bs.regenerate
            + bs.absent
            + bs.arrived
            + bs.newly_fallback
            + bs.newly_skipped
            + bs.errors.new;
        if tagged > 0 {
            self.heading("Your backend", tagged);
        }
        let config = d.config_name();
        let error_at = |e: &super::ConfigError| format!("{config}:{}:{}: {}", e.line, e.column, e.message);
        for e in &b.errors.new {
            let text = self.code(&error_at(e));
            self.tagged("CONFIG", "31", &format!("{text} (generation fails on {new})"));
        }
        for x in &b.breaks {
            let text = format!(
                "{}: your kernel's Rust method changed: {} {arrow} {}",
                self.code(&x.op),
                self.code(&x.old),
                self.code(&x.new)
            );
            self.tagged("BREAKS", "31", &text);
        }
        for g in &b.gone {
            let hint = g.likely.as_ref().map(|l| format!(" (likely renamed to {})", self.code(l))).unwrap_or_default();
            let text = format!("{}: {}{hint}; its trait method is gone", self.code(&g.op), g.why);
            self.tagged("GONE", "31", &text);
        }
        for op in &b.regenerate {
            let text = format!(
                "{}: its C++ signature changed, your Rust kernel's did not (regenerated from the header)",
                self.code(op)
            );
            self.tagged("REGEN", "33", &text);
        }
        for op in &b.absent {
            let text =
                format!("{} is not in this release, or is composite there (optional: not generated)", self.code(op));
            self.tagged("ABSENT", "33", &text);
        }
        let registered = match b.mode {
            BackendMode::Skeleton => "registered, its trait method raising NotImplementedError until you override it",
            BackendMode::Implement => "registered: you implement it",
        };
        for a in &b.arrived {
            let text = format!("{} ({}): {registered}", self.code(&a.op), a.why);
            self.tagged("NEW", "32", &text);
        }
        let fate = if b.fallback == "cpu" { "runs through the CPU fallback" } else { "raises NotImplementedError" };
        for f in &b.newly_fallback {
            let text = format!("{} ({}): you do not implement it; it {fate}", self.code(&f.op), f.why);
            self.tagged("FALLBACK", "36", &text);
        }
        for k in &b.newly_skipped {
            let text = format!("{} ({}): not generated, not yours", self.code(&k.op), k.why);
            self.tagged("SKIPPED", "2", &text);
        }
        if !b.errors.old.is_empty() {
            self.heading(
                &format!("The config does not fit {old} either; judged by what its other entries select"),
                b.errors.old.len(),
            );
            for e in &b.errors.old {
                let text = self.code(&error_at(e));
                self.item(&text);
            }
        }
    }

    /// The header's changes, whoever implements the ops: required-ness, renames, removals,
    /// additions, schema and C++ signature changes, dispatch flips.
    fn header_changes(&mut self, d: &Diff, s: &Summary) {
        self.list("Became required", &d.became_required, |_| false, "");
        self.list("No longer required", &d.no_longer_required, |_| false, "");
        if !d.renamed.is_empty() {
            self.heading("Likely renamed", d.renamed.len());
            for r in &d.renamed {
                let text = format!("{} → {}", self.code(&r.old), self.code(&r.new));
                self.item(&text);
            }
        }
        self.list("Removed", &d.removed, |k| d.removed_required.iter().any(|r| r == k), "required");
        self.list("Added", &d.added, |k| d.added_required.iter().any(|r| r == k), "required");
        if !d.changed.is_empty() {
            self.heading("Schema changes", d.changed.len());
            for c in &d.changed {
                let tags = facts(c.cpp_signature_changed, c.rust_signature_changed, c.required);
                let tags = if tags.is_empty() { String::new() } else { self.paint("33", &format!(" [{tags}]")) };
                let details: Vec<String> = c.details.iter().map(describe).collect();
                let text = format!("{}{tags}: {}", self.code(&c.op), details.join("; "));
                self.item(&text);
            }
        }
        if s.cpp_changed > 0 {
            self.heading("C++ signature changes with the same schema", s.cpp_changed);
            for c in d.cpp_changed.iter().filter(|c| !c.spelling_only) {
                let tags = facts(false, c.rust_signature_changed, c.required);
                let tags = if tags.is_empty() { String::new() } else { self.paint("33", &format!(" [{tags}]")) };
                let text = format!("{}{tags}: {} → {}", self.code(&c.op), self.code(&c.old), self.code(&c.new));
                self.item(&text);
            }
        }
        if s.cpp_respelled > 0 {
            let text = format!(
                "\n{} declaration(s) re-spelled only (e.g. c10::optional → ::std::optional); no kernel changes needed.",
                s.cpp_respelled
            );
            self.line(&text);
        }
        if !d.dispatch_flipped.is_empty() {
            self.heading("Dispatch flag flipped", d.dispatch_flipped.len());
            for f in &d.dispatch_flipped {
                let text = format!("{}: dispatch {} → {}", self.code(&f.op), f.old, f.new);
                self.item(&text);
            }
        }
    }
}

/// The facts a changed op's line states in brackets: which signatures changed, and a change in
/// whether the op is required (so an op is never listed as changed without saying it left).
fn facts(cpp: bool, rust: bool, required: Sides<bool>) -> String {
    let mut out = Vec::new();
    if cpp {
        out.push("C++ signature changed");
    }
    if rust {
        out.push("Rust method changed");
    }
    match (required.old, required.new) {
        (true, false) => out.push("no longer required"),
        (false, true) => out.push("now required"),
        _ => {}
    }
    out.join(", ")
}

fn describe(c: &ArgChange) -> String {
    let opt = |s: &Option<String>| s.clone().unwrap_or_else(|| "none".into());
    match c {
        ArgChange::Added { name, r#type, default } => match default {
            Some(d) => format!("added `{type} {name}={d}`"),
            None => format!("added `{type} {name}`"),
        },
        ArgChange::Removed { name, r#type } => format!("removed `{type} {name}`"),
        ArgChange::Renamed { old, new } => format!("renamed `{old}` to `{new}`"),
        ArgChange::Retyped { name, old, new } => format!("`{name}`: type {old} → {new}"),
        ArgChange::DefaultChanged { name, old, new } => format!("`{name}`: default {} → {}", opt(old), opt(new)),
        ArgChange::AnnotationChanged { name, old, new } => format!("`{name}`: annotation {} → {}", opt(old), opt(new)),
        ArgChange::KwargOnlyChanged { name, kwarg_only } => {
            format!("`{name}` is {}keyword-only", if *kwarg_only { "now " } else { "no longer " })
        }
        ArgChange::Moved { name, old_position, new_position } => {
            format!("`{name}` moved {old_position} → {new_position}")
        }
        ArgChange::ReturnsChanged { old, new } => format!("returns {old} → {new}"),
    }
}
