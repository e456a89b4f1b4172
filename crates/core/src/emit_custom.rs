//! Emits `register_custom.cpp` for the backend's own ops (`[[custom_op]]`), only when it
//! declares some: the `TORCH_LIBRARY` definition of each namespace, the wrappers (the same
//! [`wrapper`] as aten ops', from the same `AbiOp`), their registrations for the device and, with
//! `cpu = true`, for CPU, and for an op with a backward a `torch::autograd::Function` registered
//! for the device's autograd key (and AutogradCPU). The node's forward redispatches below
//! autograd and saves exactly the backward op's inputs; its backward calls the backward op
//! through the dispatcher, so the gradient is computed by that op's Rust kernel.

use askama::Template;

use crate::config::Config;
use crate::custom::{Backward, BackwardInput, CustomOp, Saved, type_row};
use crate::emit_cpp::{Wrapper, WrapperReturn, render, wrapper};
use crate::ir::Op;
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

/// One autograd node: its class, the kernel registered for the autograd keys, and their bodies.
struct Node {
    op: String,
    backward: String,
    node: String,
    kernel: String,
    return_type: String,
    params: String,
    args: String,
    forward: Vec<String>,
    backward_body: Vec<String>,
    result: String,
}

/// The CPU registration of an op: its wrapper, results handed back as CPU tensors.
struct CpuWrapper {
    op: String,
    return_type: String,
    name: String,
    params: String,
    body: String,
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

/// `at::Tensor (const at::Tensor &, int64_t)`: the op's type for `typed<>()`.
fn signature(op: &Op) -> String {
    let params: Vec<&str> = op.cpp.params.iter().map(|p| p.ty.spelling.as_str()).collect();
    format!("{} ({})", op.cpp.return_type.spelling, params.join(", "))
}

/// A static handle on `op` in the dispatcher, named `handle`.
fn handle(op: &Op, handle: &str) -> String {
    format!(
        "static auto {handle} = c10::Dispatcher::singleton().findSchemaOrThrow(\"{}::{}\", \"{}\").typed<{}>();",
        op.schema.namespace,
        op.schema.name,
        op.schema.overload,
        signature(op)
    )
}

/// Element `k` of an op's result held in `value` (`std::get` when it returns a tuple).
fn element(op: &Op, value: &str, k: usize) -> String {
    if op.schema.returns.items.len() == 1 && !op.schema.returns.parenthesized {
        value.to_owned()
    } else {
        format!("::std::get<{k}>({value})")
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

/// `TYPE name, ...` of the op's parameters, named `names`.
fn param_list(op: &Op, names: &[String]) -> String {
    let params: Vec<String> =
        op.cpp.params.iter().zip(names).map(|(p, name)| format!("{} {name}", p.ty.spelling)).collect();
    params.join(", ")
}

fn cpu_wrapper(op: &Op, w: &Wrapper) -> CpuWrapper {
    let names = param_names(op);
    let call = format!("{}({})", w.name, names.join(", "));
    let n = op.schema.returns.items.len();
    let body = match n {
        0 => format!("{call};"),
        1 if !op.schema.returns.parenthesized => format!("return as_cpu({call});"),
        _ => {
            let all: Vec<String> = (0..n).map(|k| format!("as_cpu(::std::get<{k}>(result))")).collect();
            format!("auto result = {call};\n  return {}({});", w.return_type, all.join(", "))
        }
    };
    CpuWrapper {
        op: op.key.clone(),
        return_type: w.return_type.clone(),
        name: cpu_wrapper_name(&op.rust_name),
        params: param_list(op, &names),
        body,
    }
}

fn node(c: &CustomOp, b: &Backward, bwd: &Op) -> Node {
    let op = &c.op;
    let fwd = &op.schema;
    let names = param_names(op);
    let outputs = fwd.returns.items.len();
    let mut forward = vec![
        "at::AutoDispatchBelowADInplaceOrView guard;".to_owned(),
        handle(op, "op"),
        format!("auto result = op.call({});", names.join(", ")),
    ];
    let elements: Vec<String> = (0..outputs).map(|k| element(op, "result", k)).collect();
    forward.push(format!("torch::autograd::variable_list outputs = {{{}}};", elements.join(", ")));
    // Tensors the backward takes, in the order it takes them; other values by name.
    let mut saved_tensors = Vec::new();
    let mut read = Vec::new();
    for input in &b.inputs {
        match *input {
            BackwardInput::Grad(j) => read.push(format!("grads[{j}]")),
            BackwardInput::Output(j) => {
                read.push(format!("saved[{}]", saved_tensors.len()));
                saved_tensors.push(format!("outputs[{j}]"));
            }
            BackwardInput::Arg(i) => {
                let a = &fwd.arguments[i];
                match type_row(&a.ty).map(|r| r.saved) {
                    Some(Saved::Value(get)) => {
                        forward.push(format!("ctx->saved_data[\"{}\"] = {};", a.name, names[i]));
                        read.push(format!("ctx->saved_data[\"{}\"].{get}", a.name));
                    }
                    _ => {
                        read.push(format!("saved[{}]", saved_tensors.len()));
                        saved_tensors.push(names[i].clone());
                    }
                }
            }
        }
    }
    if !saved_tensors.is_empty() {
        forward.push(format!("ctx->save_for_backward({{{}}});", saved_tensors.join(", ")));
    }
    let without_grad: Vec<String> = (0..outputs)
        .filter(|j| !b.inputs.contains(&BackwardInput::Grad(*j)))
        .map(|j| format!("outputs[{j}]"))
        .collect();
    if !without_grad.is_empty() {
        forward.push(format!("ctx->mark_non_differentiable({{{}}});", without_grad.join(", ")));
    }
    forward.push("return outputs;".into());
    let mut backward_body = Vec::new();
    if !saved_tensors.is_empty() {
        backward_body.push("auto saved = ctx->get_saved_variables();".into());
    }
    backward_body.push(handle(bwd, "backward_op"));
    backward_body.push(format!("auto result = backward_op.call({});", read.join(", ")));
    // One slot per forward argument: the non-differentiable ones stay undefined.
    backward_body.push(format!("torch::autograd::variable_list gradients({});", fwd.arguments.len()));
    for (k, &i) in b.differentiable.iter().enumerate() {
        backward_body.push(format!("gradients[{i}] = {};", element(bwd, "result", k)));
    }
    backward_body.push("return gradients;".into());
    let return_type = op.cpp.return_type.spelling.clone();
    let result = if outputs == 1 && !fwd.returns.parenthesized {
        "return outputs[0];".to_owned()
    } else {
        let all: Vec<String> = (0..outputs).map(|j| format!("outputs[{j}]")).collect();
        format!("return {return_type}({});", all.join(", "))
    };
    Node {
        op: op.key.clone(),
        backward: b.key.clone(),
        node: autograd_node_name(&op.rust_name),
        kernel: autograd_kernel_name(&op.rust_name),
        return_type,
        params: param_list(op, &names),
        args: names.join(", "),
        forward,
        backward_body,
        result,
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
