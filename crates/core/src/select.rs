//! Selection: which ops of a header a [`Config`] generates, registers or skips (and why), how the
//! ops CPU has no kernel for are answered, and the backend's own ops.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::abi::Crossing;
use crate::config::{Config, Fallback, Named};
use crate::diagnostic::{Diagnostic, diag_at};
use crate::ir::{Model, Op, OpClass, OpKind};
use crate::policy::{self, Family};
use crate::suggest::unknown_op_message;

/// Why a required op is not generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    ExcludedFamily(Family),
    Excluded,
    /// Its types cannot cross the ABI (only types no release has used yet).
    Unsupported(String),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::ExcludedFamily(family) => write!(f, "family `{family}` is excluded by the config"),
            SkipReason::Excluded => f.write_str("excluded by the config"),
            SkipReason::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

/// One op the backend gets code for.
#[derive(Debug, Clone)]
pub struct Selected<'m> {
    pub op: &'m Op,
    pub abi: crate::abi::AbiOp,
    /// Named in `implement`: the trait method has no default body.
    pub implemented: bool,
    /// Registered for the dispatch key (else it reaches the fallback).
    pub registered: bool,
    /// Also registered for the autograd key.
    pub autograd: bool,
}

impl Selected<'_> {
    /// Whether the op gets a C++ wrapper, and so a Rust entry point and trait method: it is
    /// registered for the dispatch key or for the autograd key.
    pub fn is_wrapped(&self) -> bool {
        self.registered || self.autograd
    }
}

/// An in-place op the backend runs by the kernel of its `.out` form with `out` = `self`: the
/// `name_` op with the arguments of a registered `name.out` op less `out`, which the backend does
/// not implement itself. PyTorch's backends run a structured op's in-place form so (one kernel,
/// its output given); on a backend without the in-place kernel PyTorch's default computes the
/// functional form into a new tensor and copies it into `self`. The wrapper refuses to resize
/// `self` (`x.add_(y)` keeps `x`'s shape), and is registered only where PyTorch derives the op
/// from `.out` (regen_marshal.h's `derived_in_place`: an op with its own composite keeps it).
#[derive(Debug, Clone)]
pub struct InPlaceRoute<'m> {
    pub op: &'m Op,
    /// How its own arguments cross (`abi::lower_abi`), for its wrapper's parameters.
    pub abi: crate::abi::AbiOp,
    /// The registered `.out` op whose entry point runs it, by its index in
    /// [`Selection::selected`].
    pub out: usize,
    /// For each argument of `out`, the index of the in-place op's argument passed for it
    /// (`self`, 0, for `out`).
    pub args: Vec<usize>,
}

/// What answers a required op that CPU has no kernel for (`policy::NO_CPU_KERNEL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuLessAnswer {
    /// The backend registers its own kernel.
    Native,
    /// Not generated; calling it fails.
    Skipped(SkipReason),
    /// `fallback = "error"`: calling it raises NotImplementedError.
    ErrorFallback,
    /// `fallback = "cpu"` would answer it and fail: generation refuses ([`Config::check_served`]).
    Unserved,
}

impl std::fmt::Display for CpuLessAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CpuLessAnswer::Native => f.write_str("native"),
            CpuLessAnswer::Skipped(why) => write!(f, "skipped: {why}"),
            CpuLessAnswer::ErrorFallback => f.write_str("the error fallback"),
            CpuLessAnswer::Unserved => f.write_str("unserved: the CPU fallback cannot run it"),
        }
    }
}

/// The ops to generate, in header order, and the required ops skipped with their reasons.
#[derive(Debug, Clone)]
pub struct Selection<'m> {
    pub selected: Vec<Selected<'m>>,
    pub skipped: Vec<(&'m Op, SkipReason)>,
    /// Required ops CPU has no kernel for, with why and what answers them.
    pub cpu_less: Vec<(&'m Op, &'static str, CpuLessAnswer)>,
    /// `optional` ops this header does not have, or has only as a composite PyTorch decomposes
    /// (not registrable: see [`Config::select_reporting`]), in config order.
    pub absent: Vec<String>,
    /// The backend's own ops (`[[custom_op]]`): implemented and registered, in declared order.
    pub custom: Vec<Selected<'m>>,
    /// The autocast registrations the config asks for over this header, and the listed ops it lacks.
    pub autocast: crate::autocast::AutocastPlan,
    /// The in-place ops run by their `.out` kernels, in header order.
    pub in_place: Vec<InPlaceRoute<'m>>,
}

/// The in-place ops run by their `.out` kernels ([`InPlaceRoute`]), in header order: those with
/// a default kernel in PyTorch (a required one is the backend's to implement) that the config
/// neither implements nor excludes.
fn in_place_routes<'m>(config: &'m Config, model: &'m Model, selected: &[Selected<'m>]) -> Vec<InPlaceRoute<'m>> {
    let mut outs: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for (i, s) in selected.iter().enumerate().filter(|(_, s)| s.registered && s.op.kind == OpKind::Out) {
        outs.entry(s.op.name()).or_default().push(i);
    }
    // Sets, as in `select_reporting`: hundreds of names, looked up per in-place op.
    let set = |list: &'m [Named]| list.iter().map(|n| n.name.as_str()).collect::<FxHashSet<&str>>();
    let (implement, exclude) = (set(config.implement.as_deref().unwrap_or_default()), set(&config.exclude));
    model
        .ops
        .iter()
        .filter(|op| op.kind == OpKind::InPlace && op.class() == OpClass::HasDefault)
        .filter(|op| !implement.contains(op.key.as_str()) && !exclude.contains(op.key.as_str()))
        .filter(|op| op.family.is_none_or(|f| !config.exclude_families.contains(&f)))
        .filter_map(|op| {
            let base = op.name().strip_suffix('_')?;
            outs.get(base)?
                .iter()
                // Its result is its `out` argument, which crosses as nothing (every release).
                .filter(|&&out| {
                    selected[out].abi.returns.iter().all(|r| matches!(r.kind.crossing(), Crossing::Alias(_)))
                })
                .find_map(|&out| route_args(op, selected[out].op).map(|args| (out, args)))
                .and_then(|(out, args)| Some(InPlaceRoute { op, abi: crate::abi::lower_abi(op).ok()?, out, args }))
        })
        .collect()
}

/// How `out`'s arguments take `op`'s: its arguments less its one written tensor, in order, are
/// exactly `op`'s (names and types), and that written tensor is `op`'s `self`.
fn route_args(op: &Op, out: &Op) -> Option<Vec<usize>> {
    let written = |a: &crate::ir::Argument| a.annotation.as_ref().is_some_and(|an| an.is_write);
    let first = op.schema.arguments.first()?;
    if first.name != "self" || !written(first) || op.schema.arguments[1..].iter().any(written) {
        return None;
    }
    let out_args = &out.schema.arguments;
    let slot = out_args.iter().position(written)?;
    let tensor = crate::ir::SchemaType::Base(crate::ir::BaseType::Tensor);
    if out_args[slot].ty != tensor || first.ty != tensor || out_args.iter().filter(|a| written(a)).count() != 1 {
        return None;
    }
    let rest = out_args.iter().enumerate().filter(|&(i, _)| i != slot).map(|(_, a)| a);
    if rest.clone().count() != op.schema.arguments.len()
        || rest.clone().zip(&op.schema.arguments).any(|(a, b)| a.name != b.name || a.ty != b.ty)
    {
        return None;
    }
    Some(
        (0..out_args.len())
            .map(|i| {
                if i == slot {
                    0
                } else if i < slot {
                    i
                } else {
                    i - 1
                }
            })
            .collect(),
    )
}

impl<'m> Selection<'m> {
    /// The ops with a C++ wrapper and a Rust entry point, in header order.
    pub fn wrapped(&self) -> impl Iterator<Item = &Selected<'m>> {
        self.selected.iter().filter(|s| s.is_wrapped())
    }

    /// Every op with a Rust entry point: the wrapped aten ops, then the custom ops.
    pub fn entry_points(&self) -> impl Iterator<Item = &Selected<'m>> {
        self.wrapped().chain(&self.custom)
    }
}

impl Config {
    /// Resolves the config's op names against the model; unknown names are errors with
    /// suggestions.
    pub fn select<'m>(&'m self, model: &'m Model) -> Result<Selection<'m>, Vec<Diagnostic>> {
        let (selection, errors) = self.select_reporting(model);
        if errors.is_empty() { Ok(selection) } else { Err(errors) }
    }

    /// The selection [`Config::select`] makes, made in spite of its errors, which come with it
    /// (sorted by position): a name the header lacks selects nothing, an op both implemented and
    /// excluded is excluded, a custom op whose Rust name clashes is left out. `regen diff` judges
    /// a header the config does not fit by what generation selects from it, so this is that
    /// selection rather than a second one.
    pub fn select_reporting<'m>(&'m self, model: &'m Model) -> (Selection<'m>, Vec<Diagnostic>) {
        let mut errors = Vec::new();
        if let Some(r) = self.reference.as_ref().filter(|r| !r.resolved) {
            // parse_config alone reads one file; load_config_file also reads the library's.
            errors.push(diag_at(
                &self.source,
                &r.config.span,
                format!("the kernel library's config {:?} was not read (Config::add_reference)", r.config.name),
            ));
        }
        // Looked up once per op of the header: sets, not the lists (hundreds of names each).
        let set = |list: &'m [Named]| list.iter().map(|n| n.name.as_str()).collect::<FxHashSet<&str>>();
        let (implement, exclude, autograd) =
            (set(self.implement.as_deref().unwrap_or_default()), set(&self.exclude), set(&self.autograd));
        // A kernel registered for an op PyTorch decomposes (CompositeImplicitAutograd) takes the
        // decomposition's place under autograd too: the op loses its gradient, and before torch
        // 2.5 (no autograd fallback for PrivateUse1) cannot be called at all. Such a release has
        // no op to implement.
        let decomposed = |key: &str| {
            model.find(key).is_some_and(|op| op.class() == OpClass::CompositeImplicit && !autograd.contains(key))
        };
        let absent: Vec<String> = self
            .optional
            .iter()
            .filter(|n| model.find(&n.name).is_none() || decomposed(&n.name))
            .map(|n| n.name.clone())
            .collect();
        for n in self.unknown_names(model) {
            errors.push(diag_at(&self.source, &n.span, unknown_op_message(&n.name, model)));
        }
        if let Some(list) = &self.implement {
            for n in list.iter().filter(|n| exclude.contains(n.name.as_str())) {
                errors.push(diag_at(&self.source, &n.span, format!("`{}` is both implemented and excluded", n.name)));
            }
            for n in list.iter().filter(|n| decomposed(&n.name) && !absent.contains(&n.name)) {
                errors.push(diag_at(
                    &self.source,
                    &n.span,
                    format!(
                        "`{}` is composite in this header (PyTorch decomposes it): a device kernel for it would \
                         take the decomposition's place under autograd too, losing its gradient (before torch \
                         2.5: leaving it uncallable); list it in `optional` to build without it for this \
                         release, or in `autograd` to register your kernel for the autograd key too",
                        n.name
                    ),
                ));
            }
        }
        let mut selected = Vec::new();
        let mut skipped = Vec::new();
        for op in &model.ops {
            let implemented = implement.contains(op.key.as_str());
            if !op.is_required() && (!implemented || absent.contains(&op.key)) {
                continue;
            }
            let family = op.family.filter(|f| self.exclude_families.contains(f));
            let reason = if exclude.contains(op.key.as_str()) {
                Some(SkipReason::Excluded)
            } else if let (Some(f), false) = (family, implemented) {
                Some(SkipReason::ExcludedFamily(f))
            } else {
                None
            };
            if let Some(reason) = reason {
                skipped.push((op, reason));
                continue;
            }
            match crate::abi::lower_abi(op) {
                Ok(abi) => selected.push(Selected {
                    op,
                    abi,
                    implemented,
                    registered: self.implement.is_none() || implemented,
                    autograd: autograd.contains(op.key.as_str()),
                }),
                Err(u) => skipped.push((op, SkipReason::Unsupported(u.reason))),
            }
        }
        let cpu_less = self.cpu_less_answers(model, &selected, &skipped);
        let custom = self.select_custom(&selected, &mut errors);
        let autocast = crate::autocast::plan(model, self.autocast, &self.autocast_ops);
        let in_place = in_place_routes(self, model, &selected);
        crate::diagnostic::sort(&mut errors);
        (Selection { selected, skipped, cpu_less, absent, custom, autocast, in_place }, errors)
    }

    /// The entries of `implement`, `exclude`, `autograd` and `[autocast_ops]` that name no op of
    /// the header, in that order: errors for generation. An `optional` op is absent rather than
    /// unknown, and excluding an op CPU has no kernel for is never an error, as those ops differ
    /// by release.
    pub fn unknown_names<'c>(&'c self, model: &Model) -> impl Iterator<Item = &'c Named> {
        let keys: FxHashSet<&str> = model.ops.iter().map(|op| op.key.as_str()).collect();
        let known_exclude = self.exclude.iter().filter(|n| policy::cpu_less(&n.name).is_none());
        let optional = |n: &Named| self.optional.iter().any(|o| o.name == n.name);
        let unknown: Vec<&Named> = self
            .implement
            .iter()
            .flatten()
            .chain(known_exclude)
            .chain(&self.autograd)
            .chain(self.autocast_ops.iter().map(|o| &o.op))
            .filter(|n| !keys.contains(n.name.as_str()) && !optional(n))
            .collect();
        unknown.into_iter()
    }

    /// The custom ops as selected ops; a Rust name an aten op's entry point already has is an
    /// error at the custom op, which is left out.
    fn select_custom<'m>(&'m self, selected: &[Selected<'m>], errors: &mut Vec<Diagnostic>) -> Vec<Selected<'m>> {
        let mut custom = Vec::new();
        for c in &self.custom_ops {
            let at = |message: String| diag_at(&self.source, &c.span, message);
            if let Some(s) = selected.iter().find(|s| s.is_wrapped() && s.op.rust_name == c.op.rust_name) {
                errors.push(at(format!(
                    "custom op `{}` gets the Rust name `{}` of `{}`",
                    c.op.key, c.op.rust_name, s.op.key
                )));
                continue;
            }
            match crate::abi::lower_abi(&c.op) {
                Ok(abi) => {
                    custom.push(Selected { op: &c.op, abi, implemented: true, registered: true, autograd: false })
                }
                Err(u) => errors.push(at(format!("custom op `{}`: {}", c.op.key, u.reason))),
            }
        }
        custom
    }

    /// How each op that CPU has no kernel for is answered: required ones, and ones whose default
    /// kernel only raises (`convolution_overrideable`), which the device must implement as well.
    fn cpu_less_answers<'m>(
        &self,
        model: &'m Model,
        selected: &[Selected<'m>],
        skipped: &[(&'m Op, SkipReason)],
    ) -> Vec<(&'m Op, &'static str, CpuLessAnswer)> {
        let mut answers = Vec::new();
        for op in &model.ops {
            let Some(c) = policy::cpu_less(&op.key) else { continue };
            let answer = if selected.iter().any(|s| s.registered && std::ptr::eq(s.op, op)) {
                CpuLessAnswer::Native
            } else if let Some((_, why)) = skipped.iter().find(|(o, _)| std::ptr::eq(*o, op)) {
                CpuLessAnswer::Skipped(why.clone())
            } else if self.exclude.iter().any(|n| n.name == op.key) {
                CpuLessAnswer::Skipped(SkipReason::Excluded)
            } else if self.fallback == Fallback::Cpu {
                CpuLessAnswer::Unserved
            } else {
                CpuLessAnswer::ErrorFallback
            };
            answers.push((op, c.reason, answer));
        }
        answers
    }

    /// Generation's check that the CPU fallback answers no op CPU has no kernel for: one error per
    /// such op, at the `fallback` setting.
    pub fn check_served(&self, selection: &Selection<'_>) -> Result<(), Vec<Diagnostic>> {
        let span = self.fallback_span.clone().unwrap_or(0..0);
        let errors: Vec<Diagnostic> = selection
            .cpu_less
            .iter()
            .filter(|(_, _, answer)| *answer == CpuLessAnswer::Unserved)
            .map(|(op, why, _)| {
                diag_at(
                    &self.source,
                    &span,
                    format!(
                        "fallback = \"cpu\" cannot serve `{}`: CPU has no kernel for it ({why}); implement it or \
                         add it to `exclude`",
                        op.key
                    ),
                )
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}
