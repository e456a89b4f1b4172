//! Emits the C++ side: the fixed ABI and marshalling headers, the registration shards (wrappers
//! with the exact dispatcher signatures, each shard declaring the Rust entry points it calls) and
//! the fallback.
//!
//! The askama templates in the top-level `templates/` only lay out text; every decision (how an
//! argument is lifted, how a result comes back) is made here from the shared [`AbiOp`].

use askama::Template;

use crate::abi::{AbiOp, RetKind};
use crate::config::{Config, Fallback, Selected, Selection};
use crate::rust_name::{cpp_params, kernel_symbol, wrapper_name};
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

pub(crate) struct Wrapper {
    pub(crate) schema: String,
    /// The Rust entry point it calls, and that symbol's C parameters.
    pub(crate) symbol: String,
    pub(crate) c_params: String,
    pub(crate) op: String,
    pub(crate) return_type: String,
    pub(crate) name: String,
    pub(crate) params: String,
    pub(crate) body: Vec<String>,
}

#[derive(Template)]
#[template(path = "register.cpp", escape = "none")]
struct Registration<'a> {
    generated_note: &'a str,
    namespace: &'a str,
    dispatch_key: &'a str,
    shard: usize,
    shard_count: usize,
    defined: Vec<&'a Wrapper>,
    registered: Vec<&'a Wrapper>,
    autograd: Vec<&'a Wrapper>,
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
}

pub(crate) fn render(t: &impl Template) -> String {
    let mut text = t.render().expect("templates render from plain strings");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// C parameters of an op's entry point: its arguments (named `names`), then one slot per crossing
/// result.
fn c_params(abi: &AbiOp, names: &[String]) -> String {
    let args = abi.args.iter().zip(names).map(|(a, name)| format!("{} {name}", a.kind.info().c_type));
    let slots =
        abi.returns.iter().enumerate().filter_map(|(k, r)| r.kind.c_slot_type().map(|t| format!("{t} regen_r{k}")));
    let all: Vec<String> = args.chain(slots).collect();
    if all.is_empty() { "void".to_owned() } else { all.join(", ") }
}

pub(crate) fn wrapper(s: &Selected<'_>, config: &Config) -> Wrapper {
    let op = s.op;
    let qualified = op.qualified();
    let symbol = kernel_symbol(&config.symbol_prefix, &op.rust_name);
    // The body calls the entry point by its unqualified symbol: no parameter may hide it.
    let names = cpp_params(op.cpp.params.iter().map(|p| p.name.as_str()), &[symbol.as_str()]);
    let mut body = Vec::new();
    let mut call_args = Vec::new();
    for (k, (a, name)) in s.abi.args.iter().zip(&names).enumerate() {
        body.push(format!(
            "auto regen_a{k} = ::regen::{}({name}, \"{qualified} argument '{}'\");",
            a.kind.info().cpp_lift,
            a.name
        ));
        call_args.push(format!("regen_a{k}"));
    }
    let mut values = Vec::new();
    for (k, r) in s.abi.returns.iter().enumerate() {
        let slot = format!("regen_r{k}");
        let (decl, pass, value) = match &r.kind {
            RetKind::Tensor => (
                Some(format!("regen_tensor {slot} = ::regen::no_tensor();")),
                format!("&{slot}"),
                format!("::regen::adopt({slot})"),
            ),
            RetKind::TensorRef(arg) => (None, String::new(), names[*arg].clone()),
            RetKind::TensorVec => (
                Some(format!("::std::vector<at::Tensor> {slot};")),
                format!("::regen::tensor_sink({slot})"),
                slot.clone(),
            ),
            RetKind::IntVec => {
                (Some(format!("::std::vector<int64_t> {slot};")), format!("::regen::i64_sink({slot})"), slot.clone())
            }
            RetKind::Int => (Some(format!("int64_t {slot} = 0;")), format!("&{slot}"), slot.clone()),
            RetKind::SymInt => {
                (Some(format!("int64_t {slot} = 0;")), format!("&{slot}"), format!("c10::SymInt({slot})"))
            }
            RetKind::Float => (Some(format!("double {slot} = 0;")), format!("&{slot}"), slot.clone()),
            RetKind::Bool => (Some(format!("bool {slot} = false;")), format!("&{slot}"), slot.clone()),
            RetKind::SymBool => {
                (Some(format!("bool {slot} = false;")), format!("&{slot}"), format!("c10::SymBool({slot})"))
            }
            RetKind::ScalarType => (
                Some(format!("int32_t {slot} = 0;")),
                format!("&{slot}"),
                format!("static_cast<at::ScalarType>({slot})"),
            ),
            RetKind::QScheme => {
                (Some(format!("int32_t {slot} = 0;")), format!("&{slot}"), format!("static_cast<at::QScheme>({slot})"))
            }
            RetKind::Scalar => (
                Some(format!("regen_scalar {slot} = ::regen::no_scalar();")),
                format!("&{slot}"),
                format!("::regen::from_c({slot})"),
            ),
        };
        body.extend(decl);
        if r.kind.c_slot_type().is_some() {
            call_args.push(pass);
        }
        // Vectors are locals worth moving into a tuple (a lone local is returned by name instead,
        // which keeps copy elision).
        values.push((value, matches!(r.kind, RetKind::TensorVec | RetKind::IntVec)));
    }
    body.push(format!("::regen::check({symbol}({}));", call_args.join(", ")));
    let return_type = op.cpp.return_type.spelling.clone();
    if s.abi.returns_tuple {
        let elements: Vec<String> =
            values.iter().map(|(v, local)| if *local { format!("::std::move({v})") } else { v.clone() }).collect();
        body.push(format!("return {return_type}({});", elements.join(", ")));
    } else if let Some((v, _)) = values.first() {
        body.push(format!("return {v};"));
    }
    let params: Vec<String> =
        op.cpp.params.iter().zip(&names).map(|(p, name)| format!("{} {name}", p.ty.spelling)).collect();
    Wrapper {
        schema: op.schema_text.clone(),
        symbol,
        c_params: c_params(&s.abi, &names),
        op: op.key.clone(),
        return_type,
        name: wrapper_name(&op.rust_name),
        params: params.join(", "),
        body,
    }
}

/// Every C++ output file, in a fixed order.
pub fn emit_cpp(selection: &Selection<'_>, config: &Config, note: &str) -> Vec<OutputFile> {
    let file = |name: &str, text: String| OutputFile { name: name.to_owned(), contents: text.into_bytes() };
    let mut files = vec![
        file("regen_abi.h", render(&AbiHeader { generated_note: note })),
        file("regen_marshal.h", render(&MarshalHeader { generated_note: note })),
    ];
    let wrapped: Vec<(&Selected<'_>, Wrapper)> = selection.wrapped().map(|s| (s, wrapper(s, config))).collect();
    for shard in 0..SHARDS {
        let chunk: Vec<&(&Selected<'_>, Wrapper)> =
            wrapped.iter().filter(|(s, _)| shard_of(&s.op.key) == shard).collect();
        let unit = Registration {
            generated_note: note,
            namespace: &config.namespace,
            dispatch_key: &config.dispatch_key,
            shard: shard + 1,
            shard_count: SHARDS,
            defined: chunk.iter().map(|(_, w)| w).collect(),
            registered: chunk.iter().filter(|(s, _)| s.registered).map(|(_, w)| w).collect(),
            autograd: chunk.iter().filter(|(s, _)| s.autograd).map(|(_, w)| w).collect(),
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
    };
    files.push(file("register_fallback.cpp", render(&fallback)));
    files
}
