//! Emits `register_custom.cpp` for the backend's own ops (`[[custom_op]]`), only when it
//! declares some: the `TORCH_LIBRARY` definition of each namespace, the wrappers (the same
//! `emit_cpp::wrapper` as aten ops', from the same `AbiOp`), their registrations for the device and, with
//! `cpu = true`, for CPU, and for an op with a backward a `torch::autograd::Function` registered
//! for the device's autograd key (and AutogradCPU). The node's forward redispatches below
//! autograd and saves exactly the backward op's inputs; its backward calls the backward op
//! through the dispatcher, so the gradient is computed by that op's Rust kernel.
//!
//! This module decides what each node saves, calls and returns; `templates/register_custom.cpp`
//! spells it in C++.

use askama::Template;

use crate::config::Config;
use crate::custom::{Backward, BackwardInput, CustomOp, Saved, type_row};
use crate::emit_cpp::{Wrapper, WrapperReturn, render, wrapper};
use crate::ir::{Op, qualified_name};
use crate::rust_name::{autograd_kernel_name, autograd_node_name, cpp_params, cpu_wrapper_name, wrapper_name};
use crate::select::{Selected, Selection};
use crate::write::OutputFile;

struct Impl {
    name: String,
    /// The wrapper or autograd kernel in the backend's namespace; `None` for PyTorch's
    /// `autogradNotImplementedFallback`, the autograd kernel of an op without a backward.
    function: Option<String>,
}

struct Block {
    key: String,
    impls: Vec<Impl>,
}

struct Library {
    namespace: String,
    /// Schema strings as C++ string literal contents.
    schemas: Vec<String>,
    blocks: Vec<Block>,
}

/// A parameter of the CPU wrapper and the autograd node: the header-style C++ type and its name.
struct Param {
    ty: String,
    name: String,
}

/// A static handle on an op in the dispatcher (`findSchemaOrThrow(...).typed<...>()`).
struct Handle {
    /// `ns::name`, and the overload.
    name: String,
    overload: String,
    return_type: String,
    param_types: Vec<String>,
}

/// How an op's C++ result holds its elements.
#[derive(Clone, Copy)]
enum Results {
    /// `void`.
    Nothing,
    /// One value, not a tuple.
    One,
    /// A `::std::tuple` of this many elements (`::std::get<k>`).
    Tuple(usize),
}

impl Results {
    fn of(op: &Op) -> Results {
        let n = op.schema.returns.items.len();
        match n {
            1 if !op.schema.returns.parenthesized => Results::One,
            0 => Results::Nothing,
            _ => Results::Tuple(n),
        }
    }
}

/// A tensor the node's forward saves for the backward.
enum SavedTensor {
    /// Forward output `.0`.
    Output(usize),
    /// The parameter so named.
    Param(String),
}

/// One argument of the backward op's call.
enum BackwardArg {
    /// The gradient of forward output `.0`.
    Grad(usize),
    /// Saved tensor `.0`.
    Saved(usize),
    /// `ctx->saved_data[name]`, read back with `get` (an `IValue` method).
    Value { name: String, get: &'static str },
}

/// One autograd node: its class, the kernel registered for the autograd keys, and what their
/// bodies save, call and return.
struct Node {
    op: String,
    backward: String,
    node: String,
    kernel: String,
    return_type: String,
    params: Vec<Param>,
    forward: Handle,
    forward_results: Results,
    /// The forward's output count (the node's `outputs`).
    outputs: usize,
    /// Non-tensor arguments the backward takes: (argument name, parameter).
    saved_values: Vec<(String, String)>,
    saved_tensors: Vec<SavedTensor>,
    /// Outputs whose gradient the backward does not take.
    non_differentiable: Vec<usize>,
    backward_op: Handle,
    backward_args: Vec<BackwardArg>,
    backward_results: Results,
    /// The forward's argument count: one gradient slot each.
    gradient_slots: usize,
    /// (forward argument, backward result element) per differentiable argument.
    gradients: Vec<(usize, usize)>,
}

/// The CPU registration of an op: its wrapper, results handed back as CPU tensors.
struct CpuWrapper {
    op: String,
    return_type: String,
    name: String,
    params: Vec<Param>,
    /// The device wrapper it calls.
    wrapper: String,
    results: Results,
}

#[derive(Template)]
#[template(path = "register_custom.cpp", escape = "none")]
struct CustomUnit<'a> {
    generated_note: &'a str,
    namespace: &'a str,
    wrappers: Vec<Wrapper>,
    cpu_wrappers: Vec<CpuWrapper>,
    nodes: Vec<Node>,
    libraries: Vec<Library>,
}

fn cpp_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn handle(op: &Op) -> Handle {
    Handle {
        name: qualified_name(&op.schema.namespace, &op.schema.name),
        overload: op.schema.overload.to_string(),
        return_type: op.cpp.return_type.spelling.clone(),
        param_types: op.cpp.params.iter().map(|p| p.ty.spelling.clone()).collect(),
    }
}

/// What the CPU wrapper and the autograd node declare or call unqualified in a function that has
/// the op's parameters.
const NODE_LOCALS: &[&str] = &["ctx", "guard", "op", "result", "outputs", "as_cpu"];

/// The op's C++ parameter names in the CPU wrapper and the autograd node (the wrapper, from
/// `emit_cpp`, has its own): escaped where they would hide a local or a called function.
fn param_names(op: &Op) -> Vec<String> {
    let own = [wrapper_name(&op.rust_name), autograd_node_name(&op.rust_name)];
    let taken: Vec<&str> = NODE_LOCALS.iter().copied().chain(own.iter().map(String::as_str)).collect();
    cpp_params(op.cpp.params.iter().map(|p| p.name.as_str()), &taken)
}

/// The op's parameters, named `names`.
fn params(op: &Op, names: &[String]) -> Vec<Param> {
    op.cpp.params.iter().zip(names).map(|(p, name)| Param { ty: p.ty.spelling.clone(), name: name.clone() }).collect()
}

fn cpu_wrapper(op: &Op, w: &Wrapper) -> CpuWrapper {
    CpuWrapper {
        op: op.key.clone(),
        return_type: w.return_type.clone(),
        name: cpu_wrapper_name(&op.rust_name),
        params: params(op, &param_names(op)),
        wrapper: w.name.clone(),
        results: Results::of(op),
    }
}

fn node(c: &CustomOp, b: &Backward, bwd: &Op) -> Node {
    let op = &c.op;
    let fwd = &op.schema;
    let names = param_names(op);
    let outputs = fwd.returns.items.len();
    // Tensors the backward takes, in the order it takes them; other values by name.
    let mut saved_values = Vec::new();
    let mut saved_tensors = Vec::new();
    let mut backward_args = Vec::new();
    for input in &b.inputs {
        match *input {
            BackwardInput::Grad(j) => backward_args.push(BackwardArg::Grad(j)),
            BackwardInput::Output(j) => {
                backward_args.push(BackwardArg::Saved(saved_tensors.len()));
                saved_tensors.push(SavedTensor::Output(j));
            }
            BackwardInput::Arg(i) => {
                let a = &fwd.arguments[i];
                match type_row(&a.ty).map(|r| r.saved) {
                    Some(Saved::Value(get)) => {
                        saved_values.push((a.name.to_string(), names[i].clone()));
                        backward_args.push(BackwardArg::Value { name: a.name.to_string(), get });
                    }
                    _ => {
                        backward_args.push(BackwardArg::Saved(saved_tensors.len()));
                        saved_tensors.push(SavedTensor::Param(names[i].clone()));
                    }
                }
            }
        }
    }
    Node {
        op: op.key.clone(),
        backward: b.key.clone(),
        node: autograd_node_name(&op.rust_name),
        kernel: autograd_kernel_name(&op.rust_name),
        return_type: op.cpp.return_type.spelling.clone(),
        params: params(op, &names),
        forward: handle(op),
        forward_results: Results::of(op),
        outputs,
        saved_values,
        saved_tensors,
        non_differentiable: (0..outputs).filter(|j| !b.inputs.contains(&BackwardInput::Grad(*j))).collect(),
        backward_op: handle(bwd),
        backward_args,
        backward_results: Results::of(bwd),
        gradient_slots: fwd.arguments.len(),
        gradients: b.differentiable.iter().enumerate().map(|(k, &i)| (i, k)).collect(),
    }
}

/// `register_custom.cpp`, or nothing when the backend declares no custom op.
pub fn emit_custom(selection: &Selection<'_>, config: &Config, note: &str) -> Vec<OutputFile> {
    if config.custom_ops.is_empty() {
        return Vec::new();
    }
    let by_key = |key: &str| selection.custom.iter().find(|s| s.op.key == key);
    let wrappers: Vec<Wrapper> = selection.custom.iter().map(|s: &Selected<'_>| wrapper(s, config)).collect();
    let mut nodes = Vec::new();
    let mut cpu_wrappers = Vec::new();
    let mut libraries: Vec<Library> = Vec::new();
    for (c, w) in config.custom_ops.iter().zip(&wrappers) {
        let ns = c.op.schema.namespace.to_string();
        let name = c.op.schema.key();
        let node = c.backward.as_ref().and_then(|b| by_key(&b.key).map(|bwd| node(c, b, bwd.op)));
        let k = match libraries.iter().position(|l| l.namespace == ns) {
            Some(k) => k,
            None => {
                libraries.push(Library { namespace: ns, schemas: Vec::new(), blocks: Vec::new() });
                libraries.len() - 1
            }
        };
        let lib = &mut libraries[k];
        lib.schemas.push(cpp_string(&c.op.schema_text));
        let mut add = |key: String, function: Option<&str>| {
            let entry = Impl { name: name.clone(), function: function.map(str::to_owned) };
            match lib.blocks.iter_mut().find(|b| b.key == key) {
                Some(b) => b.impls.push(entry),
                None => lib.blocks.push(Block { key, impls: vec![entry] }),
            }
        };
        add(config.dispatch_key.clone(), Some(&w.name));
        if c.cpu {
            let cpu = cpu_wrapper(&c.op, w);
            add("CPU".into(), Some(&cpu.name));
            cpu_wrappers.push(cpu);
        }
        // An op without a backward still needs an autograd kernel: releases before 2.5 have no
        // autograd fallback for PrivateUse1 ("Could not run ... with arguments from the
        // 'AutogradPrivateUse1' backend"). PyTorch's not-implemented kernel runs the op and makes
        // backpropagating through it an error instead of a silently missing gradient.
        let autograd = node.as_ref().map(|n| n.kernel.as_str());
        add(format!("Autograd{}", config.dispatch_key), autograd);
        if c.cpu {
            add("AutogradCPU".into(), autograd);
        }
        nodes.extend(node);
    }
    let unit =
        CustomUnit { generated_note: note, namespace: &config.namespace, wrappers, cpu_wrappers, nodes, libraries };
    vec![OutputFile { name: "register_custom.cpp".into(), contents: render(&unit).into_bytes() }]
}
