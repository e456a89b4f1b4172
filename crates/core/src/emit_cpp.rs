//! Emits the C++ side: the fixed ABI and marshalling headers, the registration shards (wrappers
//! with the exact dispatcher signatures, each shard declaring the Rust entry points it calls) and
//! the fallback.
//!
//! Every decision (how an argument is lifted, how a result comes back) is the shared
//! [`AbiOp`](crate::abi::AbiOp)'s, whose kinds carry their spellings; this module hands the
//! askama templates in the top-level `templates/` structured data, and the templates spell all the
//! C++ (`wrapper.cpp` holds the wrapper and its entry point's declaration).

use askama::Template;

use crate::abi::{ArgKind, Crossing, RetSpelling};
use crate::config::{Config, Fallback};
use crate::rust_name::{cpp_params, kernel_symbol, wrapper_name};
use crate::select::{CpuLessAnswer, InPlaceRoute, Selected, Selection, SkipReason};
use crate::write::OutputFile;

/// Registration wrappers are split over this many translation units, so a 2-core build
/// compiles them in parallel; each TU pays for the torch headers once.
pub const SHARDS: usize = 4;

/// The shard an op's wrapper lives in, from its key alone (FNV-1a): registering or dropping one op
/// changes one shard, so a build that caches objects recompiles one translation unit, not all.
pub fn shard_of(key: &str) -> usize {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (hash % SHARDS as u64) as usize
}

#[derive(Template)]
#[template(path = "regen_abi.h", escape = "none")]
struct AbiHeader<'a> {
    generated_note: &'a str,
}

#[derive(Template)]
#[template(path = "regen_marshal.h", escape = "none")]
struct MarshalHeader<'a> {
    generated_note: &'a str,
}

/// One op's C++ wrapper, as `templates/register.cpp` (and `register_custom.cpp`) spell it.
pub(crate) struct Wrapper {
    pub(crate) schema: String,
    /// The Rust entry point it calls.
    pub(crate) symbol: String,
    /// `name.overload`, as registered.
    pub(crate) op: String,
    /// `namespace::name.overload`, as error messages name the op.
    pub(crate) qualified: String,
    pub(crate) return_type: String,
    pub(crate) name: String,
    pub(crate) args: Vec<WrapperArg>,
    /// Every element of the result, in order.
    pub(crate) returns: Vec<WrapperReturn>,
    /// The C++ return is a `::std::tuple<...>` built from every element.
    pub(crate) returns_tuple: bool,
    /// Where the call's device comes from, in order ([`device_candidates`]); empty: no guard.
    pub(crate) device_candidates: Vec<String>,
}

impl Wrapper {
    /// The results that cross, each through its slot, in result order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.returns.iter().filter_map(|r| match r {
            WrapperReturn::Slot(slot) => Some(slot),
            WrapperReturn::Alias(_) => None,
        })
    }

    /// Whether any result crosses (the entry point has slot parameters after its arguments).
    pub(crate) fn has_slots(&self) -> bool {
        self.slots().next().is_some()
    }

    /// Whether the entry point takes no parameter at all (`void` in C).
    pub(crate) fn takes_nothing(&self) -> bool {
        self.args.is_empty() && !self.has_slots()
    }
}

/// One parameter of a wrapper, lifted into its C ABI form `regen_a{index}`.
pub(crate) struct WrapperArg {
    /// The header's C++ type, repeated in the wrapper's signature.
    pub(crate) cpp_type: String,
    /// The C++ parameter name (escaped where it would hide something the body calls).
    pub(crate) param: String,
    /// The schema argument's name, for error messages.
    pub(crate) name: String,
    /// The `regen::lift_*` helper and the C type it produces.
    pub(crate) lift: &'static str,
    pub(crate) c_type: &'static str,
}

/// A crossing result, passed as the slot `regen_r{index}`.
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    pub(crate) index: usize,
    pub(crate) spelling: RetSpelling,
}

/// One element of a wrapper's result.
pub(crate) enum WrapperReturn {
    /// A `Tensor &` result: the parameter it aliases, by its C++ name; nothing crosses.
    Alias(String),
    Slot(Slot),
}

/// The wrapper of an in-place op run by its `.out` op's entry point with `out` = `self`
/// ([`InPlaceRoute`](crate::select::InPlaceRoute)), as `templates/wrapper.cpp` spells it.
pub(crate) struct InPlaceWrapper {
    pub(crate) schema: String,
    /// `name.overload` of the in-place op, as registered.
    pub(crate) op: String,
    /// `namespace::name.overload` of the in-place op, as error messages name it.
    pub(crate) qualified: String,
    /// `namespace::name.overload` of the `.out` op it runs.
    pub(crate) out_qualified: String,
    /// The `.out` op's entry point.
    pub(crate) symbol: String,
    pub(crate) return_type: String,
    pub(crate) name: String,
    /// The in-place op's parameters, each lifted once (`self` first).
    pub(crate) args: Vec<WrapperArg>,
    /// For each argument of the entry point, the index of the lifted parameter passed.
    pub(crate) call: Vec<usize>,
    pub(crate) device_candidates: Vec<String>,
}

/// The in-place wrapper for `route`, which calls `out`'s entry point.
fn in_place_wrapper(route: &InPlaceRoute<'_>, out: &Selected<'_>, config: &Config) -> InPlaceWrapper {
    let op = route.op;
    let symbol = kernel_symbol(&config.symbol_prefix, &out.op.rust_name);
    let names = cpp_params(op.cpp.params.iter().map(|p| p.name.as_str()), &[symbol.as_str()]);
    InPlaceWrapper {
        schema: op.schema_text.clone(),
        op: op.key.clone(),
        qualified: op.qualified(),
        out_qualified: out.op.qualified(),
        symbol,
        return_type: op.cpp.return_type.spelling.clone(),
        name: wrapper_name(&op.rust_name),
        args: wrapper_args(op, &route.abi, &names),
        call: route.args.clone(),
        device_candidates: device_candidates(route.abi.args.iter().map(|a| a.kind).zip(&names)),
    }
}

#[derive(Template)]
#[template(path = "register.cpp", escape = "none")]
struct Registration<'a> {
    generated_note: &'a str,
    namespace: &'a str,
    dispatch_key: &'a str,
    shard: usize,
    shard_count: usize,
    /// The environment variable that routes named ops to the CPU fallback ([`routing_var`]).
    routing_var: &'a str,
    defined: Vec<&'a Wrapper>,
    registered: Vec<&'a Wrapper>,
    autograd: Vec<&'a Wrapper>,
    /// In-place ops run by `.out` entry points, defined and registered (where PyTorch derives
    /// them from `.out`) here.
    in_place: Vec<&'a InPlaceWrapper>,
    /// The `.out` entry points they call that `defined` does not declare.
    in_place_calls: Vec<&'a Wrapper>,
}

#[derive(Template)]
#[template(path = "fallback.cpp", escape = "none")]
struct FallbackUnit<'a> {
    generated_note: &'a str,
    namespace: &'a str,
    dispatch_key: &'a str,
    device: &'a str,
    policy: &'a str,
    cpu: bool,
    routing_var: &'a str,
    /// The ops regen.toml excluded (`name.overload`, why), by name: the fallback names the reason
    /// when one is called instead of running it on CPU.
    excluded: Vec<(&'a str, String)>,
    /// The excluded ops CPU has no kernel for (`policy::NO_CPU_KERNEL`): PyTorch's own answer
    /// for the device is a composite that raises a message of its own (convolution_overrideable)
    /// or the CPU fallback's "Could not run ... 'CPU' backend", so each gets a kernel that names
    /// the exclusion instead.
    refused: Vec<&'a str>,
}

pub(crate) fn render(t: &impl Template) -> String {
    let mut text = t.render().expect("templates render from plain strings");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

pub(crate) fn wrapper(s: &Selected<'_>, config: &Config) -> Wrapper {
    let op = s.op;
    let symbol = kernel_symbol(&config.symbol_prefix, &op.rust_name);
    // The body calls the entry point by its unqualified symbol: no parameter may hide it.
    let names = cpp_params(op.cpp.params.iter().map(|p| p.name.as_str()), &[symbol.as_str()]);
    let args = wrapper_args(op, &s.abi, &names);
    let returns: Vec<WrapperReturn> = s
        .abi
        .returns
        .iter()
        .enumerate()
        .map(|(index, r)| match r.kind.crossing() {
            Crossing::Slot(spelling) => WrapperReturn::Slot(Slot { index, spelling }),
            Crossing::Alias(arg) => WrapperReturn::Alias(names[arg].clone()),
        })
        .collect();
    let device_candidates = device_candidates(s.abi.args.iter().map(|a| a.kind).zip(&names));
    Wrapper {
        device_candidates,
        schema: op.schema_text.clone(),
        symbol,
        op: op.key.clone(),
        qualified: op.qualified(),
        return_type: op.cpp.return_type.spelling.clone(),
        name: wrapper_name(&op.rust_name),
        args,
        returns,
        returns_tuple: s.abi.returns_tuple,
    }
}

/// A wrapper's parameters, each with its lift: the header's C++ types, `names` (escaped), as
/// `abi` lowers each argument.
fn wrapper_args(op: &crate::ir::Op, abi: &crate::abi::AbiOp, names: &[String]) -> Vec<WrapperArg> {
    abi.args
        .iter()
        .zip(&op.cpp.params)
        .zip(names)
        .map(|((a, p), param)| WrapperArg {
            cpp_type: p.ty.spelling.clone(),
            param: param.clone(),
            name: a.name.clone(),
            lift: a.kind.cpp_lift(),
            c_type: a.kind.c_type(),
        })
        .collect()
}

/// The expressions a wrapper's device guard picks the call's device from
/// (`regen::call_device` in regen_marshal.h takes the first that is a PrivateUse1 device): a
/// factory's `device` argument first, as torchgen's guards use the tensor options, then every
/// tensor, tensor list and optional tensor in argument order. A list of optional tensors
/// (`indices`) is not read: the tensor it indexes comes first.
fn device_candidates<'a>(args: impl Iterator<Item = (ArgKind, &'a String)> + Clone) -> Vec<String> {
    let devices = args.clone().filter_map(|(kind, name)| match kind {
        ArgKind::Device => Some(format!("::regen::device_of_device({name})")),
        ArgKind::OptionalDevice => Some(format!("::regen::device_of_opt_device({name})")),
        _ => None,
    });
    let tensors = args.filter_map(|(kind, name)| match kind {
        ArgKind::Tensor => Some(format!("::regen::device_of_tensor({name})")),
        ArgKind::OptionalTensor => Some(format!("::regen::device_of_opt_tensor({name})")),
        ArgKind::TensorList => Some(format!("::regen::device_of_tensor_list({name})")),
        _ => None,
    });
    devices.chain(tensors).collect()
}

/// The environment variable that names ops to route to the CPU fallback although the backend
/// has kernels for them (regen_runtime::fallback::routed): `<DEVICE>_FALLBACK_OPS`, each
/// backend under its own name, as `REGEN_FALLBACK_OPS` for the device "regen".
pub fn routing_var(device: &str) -> String {
    let prefix: String =
        device.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("{prefix}_FALLBACK_OPS")
}

/// The ops the config excluded, by key, with the reason the fallback gives when one is called.
fn excluded<'m>(selection: &Selection<'m>) -> Vec<(&'m str, String)> {
    let mut excluded: Vec<(&str, String)> = selection
        .skipped
        .iter()
        .filter_map(|(op, why)| match why {
            SkipReason::ExcludedFamily(family) => Some((op.key.as_str(), format!("family {}", family.as_str()))),
            SkipReason::Excluded => Some((op.key.as_str(), "by name".to_owned())),
            SkipReason::Unsupported(_) => None,
        })
        .collect();
    excluded.sort();
    excluded
}

/// Every C++ output file, in a fixed order.
pub fn emit_cpp(selection: &Selection<'_>, config: &Config, note: &str) -> Vec<OutputFile> {
    let file = |name: &str, text: String| OutputFile { name: name.to_owned(), contents: text.into_bytes() };
    let mut files = vec![
        file("regen_abi.h", render(&AbiHeader { generated_note: note })),
        file("regen_marshal.h", render(&MarshalHeader { generated_note: note })),
    ];
    let wrapped: Vec<(&Selected<'_>, Wrapper)> = selection.wrapped().map(|s| (s, wrapper(s, config))).collect();
    let in_place: Vec<(&str, InPlaceWrapper, &Wrapper)> = selection
        .in_place
        .iter()
        .filter_map(|route| {
            let out = &selection.selected[route.out];
            let called = wrapped.iter().find(|(s, _)| std::ptr::eq(*s, out)).map(|(_, w)| w)?;
            Some((route.op.key.as_str(), in_place_wrapper(route, out, config), called))
        })
        .collect();
    let routing = routing_var(&config.device);
    for shard in 0..SHARDS {
        let chunk: Vec<&(&Selected<'_>, Wrapper)> =
            wrapped.iter().filter(|(s, _)| shard_of(&s.op.key) == shard).collect();
        let routes: Vec<&(&str, InPlaceWrapper, &Wrapper)> =
            in_place.iter().filter(|(key, _, _)| shard_of(key) == shard).collect();
        let mut in_place_calls: Vec<&Wrapper> = routes
            .iter()
            .map(|(_, _, called)| *called)
            .filter(|called| !chunk.iter().any(|(_, w)| w.symbol == called.symbol))
            .collect();
        in_place_calls.sort_by(|a, b| a.symbol.cmp(&b.symbol));
        in_place_calls.dedup_by(|a, b| a.symbol == b.symbol);
        let unit = Registration {
            generated_note: note,
            namespace: &config.namespace,
            dispatch_key: &config.dispatch_key,
            shard: shard + 1,
            shard_count: SHARDS,
            routing_var: &routing,
            defined: chunk.iter().map(|(_, w)| w).collect(),
            registered: chunk.iter().filter(|(s, _)| s.registered).map(|(_, w)| w).collect(),
            autograd: chunk.iter().filter(|(s, _)| s.autograd).map(|(_, w)| w).collect(),
            in_place: routes.iter().map(|(_, w, _)| w).collect(),
            in_place_calls,
        };
        files.push(file(&format!("register_{}.cpp", shard + 1), render(&unit)));
    }
    let fallback = FallbackUnit {
        generated_note: note,
        namespace: &config.namespace,
        dispatch_key: &config.dispatch_key,
        device: &config.device,
        policy: config.fallback.as_str(),
        cpu: config.fallback == Fallback::Cpu,
        routing_var: &routing,
        excluded: excluded(selection),
        refused: selection
            .cpu_less
            .iter()
            .filter(|(_, _, answer)| {
                matches!(answer, CpuLessAnswer::Skipped(SkipReason::Excluded | SkipReason::ExcludedFamily(_)))
            })
            .map(|(op, _, _)| op.key.as_str())
            .collect(),
    };
    files.push(file("register_fallback.cpp", render(&fallback)));
    files
}
