//! How each argument and return of an op crosses the C ABI between the C++ wrappers and Rust.
//!
//! The type table is policy as data: each C++ spelling PyTorch has used (normalised: no
//! `const`, `&`, `at::`/`c10::`/`std::` qualifiers) maps to one [`ArgKind`]. Both the C++ and the
//! Rust emitters read the same [`AbiOp`], so they cannot disagree about a calling convention.
//! An op whose types are not in the table is reported as skipped, never dropped silently.

use crate::ir::{CppIndirection, CppTemplateArg, CppType, Op};

/// How one argument crosses. The C type is what the generated `regen_abi.h` declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArgKind {
    Tensor,
    OptionalTensor,
    TensorList,
    OptionalTensorList,
    Scalar,
    OptionalScalar,
    ScalarList,
    Int,
    OptionalInt,
    IntList,
    OptionalIntList,
    Float,
    OptionalFloat,
    FloatList,
    OptionalFloatList,
    Bool,
    OptionalBool,
    BoolArray,
    Str,
    OptionalStr,
    ScalarType,
    OptionalScalarType,
    Layout,
    OptionalLayout,
    Device,
    OptionalDevice,
    DeviceIndex,
    MemoryFormat,
    OptionalMemoryFormat,
    Generator,
    OptionalGenerator,
    Storage,
    Stream,
    Dimname,
    DimnameList,
    OptionalDimnameList,
}

/// Normalised C++ spelling → argument kind. `SymInt` forms cross as concrete `int64_t`
/// (a symbolic value is a clear error in the wrapper).
pub const ARG_TYPES: &[(&str, ArgKind)] = &[
    ("Tensor", ArgKind::Tensor),
    ("optional<Tensor>", ArgKind::OptionalTensor),
    ("TensorList", ArgKind::TensorList),
    ("ITensorListRef", ArgKind::TensorList),
    ("List<optional<Tensor>>", ArgKind::OptionalTensorList),
    ("Scalar", ArgKind::Scalar),
    ("optional<Scalar>", ArgKind::OptionalScalar),
    ("ArrayRef<Scalar>", ArgKind::ScalarList),
    ("int64_t", ArgKind::Int),
    ("SymInt", ArgKind::Int),
    ("optional<int64_t>", ArgKind::OptionalInt),
    ("optional<SymInt>", ArgKind::OptionalInt),
    ("IntArrayRef", ArgKind::IntList),
    ("SymIntArrayRef", ArgKind::IntList),
    ("OptionalIntArrayRef", ArgKind::OptionalIntList),
    ("OptionalSymIntArrayRef", ArgKind::OptionalIntList),
    ("optional<IntArrayRef>", ArgKind::OptionalIntList),
    ("double", ArgKind::Float),
    ("optional<double>", ArgKind::OptionalFloat),
    ("ArrayRef<double>", ArgKind::FloatList),
    ("optional<ArrayRef<double>>", ArgKind::OptionalFloatList),
    ("bool", ArgKind::Bool),
    ("optional<bool>", ArgKind::OptionalBool),
    ("array<bool,N>", ArgKind::BoolArray),
    ("string_view", ArgKind::Str),
    ("optional<string_view>", ArgKind::OptionalStr),
    ("ScalarType", ArgKind::ScalarType),
    ("optional<ScalarType>", ArgKind::OptionalScalarType),
    ("Layout", ArgKind::Layout),
    ("optional<Layout>", ArgKind::OptionalLayout),
    ("Device", ArgKind::Device),
    ("optional<Device>", ArgKind::OptionalDevice),
    ("DeviceIndex", ArgKind::DeviceIndex),
    ("MemoryFormat", ArgKind::MemoryFormat),
    ("optional<MemoryFormat>", ArgKind::OptionalMemoryFormat),
    ("Generator", ArgKind::Generator),
    ("optional<Generator>", ArgKind::OptionalGenerator),
    ("Storage", ArgKind::Storage),
    ("Stream", ArgKind::Stream),
    ("Dimname", ArgKind::Dimname),
    ("DimnameList", ArgKind::DimnameList),
    ("optional<DimnameList>", ArgKind::OptionalDimnameList),
];

/// How each argument kind is spelled in the C header, lifted in C++, and typed in Rust.
#[derive(Debug, Clone, Copy)]
pub struct ArgKindInfo {
    pub kind: ArgKind,
    /// The parameter's type in `regen_kernels.h`.
    pub c_type: &'static str,
    /// The `regen::lift_*` helper of `regen_marshal.h` that produces it.
    pub cpp_lift: &'static str,
    /// The entry point's parameter type in Rust (`regen_runtime::abi` mirror).
    pub rust_abi: &'static str,
    /// The kernel trait's safe argument type.
    pub rust_safe: &'static str,
}

const fn info(
    kind: ArgKind,
    c_type: &'static str,
    cpp_lift: &'static str,
    rust_abi: &'static str,
    rust_safe: &'static str,
) -> ArgKindInfo {
    ArgKindInfo { kind, c_type, cpp_lift, rust_abi, rust_safe }
}

#[rustfmt::skip]
pub const ARG_KIND_INFO: &[ArgKindInfo] = &[
    info(ArgKind::Tensor, "regen_tensor", "lift_tensor", "abi::regen_tensor", "TensorRef<'_>"),
    info(ArgKind::OptionalTensor, "regen_tensor", "lift_opt_tensor", "abi::regen_tensor", "Option<TensorRef<'_>>"),
    info(ArgKind::TensorList, "regen_tensor_list", "lift_tensor_list", "abi::regen_tensor_list", "TensorList<'_>"),
    info(ArgKind::OptionalTensorList, "regen_tensor_list", "lift_opt_tensor_list", "abi::regen_tensor_list", "OptionalTensorList<'_>"),
    info(ArgKind::Scalar, "regen_scalar", "lift_scalar", "abi::regen_scalar", "Scalar"),
    info(ArgKind::OptionalScalar, "regen_scalar", "lift_opt_scalar", "abi::regen_scalar", "Option<Scalar>"),
    info(ArgKind::ScalarList, "regen_scalar_list", "lift_scalar_list", "abi::regen_scalar_list", "Vec<Scalar>"),
    info(ArgKind::Int, "int64_t", "lift_int", "i64", "i64"),
    info(ArgKind::OptionalInt, "regen_opt_i64", "lift_opt_int", "abi::regen_opt_i64", "Option<i64>"),
    info(ArgKind::IntList, "regen_i64_list", "lift_int_list", "abi::regen_i64_list", "&[i64]"),
    info(ArgKind::OptionalIntList, "regen_i64_list", "lift_opt_int_list", "abi::regen_i64_list", "Option<&[i64]>"),
    info(ArgKind::Float, "double", "lift_plain", "f64", "f64"),
    info(ArgKind::OptionalFloat, "regen_opt_f64", "lift_opt_float", "abi::regen_opt_f64", "Option<f64>"),
    info(ArgKind::FloatList, "regen_f64_list", "lift_float_list", "abi::regen_f64_list", "&[f64]"),
    info(ArgKind::OptionalFloatList, "regen_f64_list", "lift_opt_float_list", "abi::regen_f64_list", "Option<&[f64]>"),
    info(ArgKind::Bool, "bool", "lift_plain", "bool", "bool"),
    info(ArgKind::OptionalBool, "regen_opt_bool", "lift_opt_bool", "abi::regen_opt_bool", "Option<bool>"),
    info(ArgKind::BoolArray, "regen_bool_list", "lift_bool_array", "abi::regen_bool_list", "&[bool]"),
    info(ArgKind::Str, "regen_str", "lift_str", "abi::regen_str", "&str"),
    info(ArgKind::OptionalStr, "regen_str", "lift_opt_str", "abi::regen_str", "Option<&str>"),
    info(ArgKind::ScalarType, "int32_t", "lift_enum", "i32", "ScalarType"),
    info(ArgKind::OptionalScalarType, "int32_t", "lift_opt_enum", "i32", "Option<ScalarType>"),
    info(ArgKind::Layout, "int32_t", "lift_enum", "i32", "Layout"),
    info(ArgKind::OptionalLayout, "int32_t", "lift_opt_enum", "i32", "Option<Layout>"),
    info(ArgKind::Device, "regen_device", "lift_device", "abi::regen_device", "Device"),
    info(ArgKind::OptionalDevice, "regen_device", "lift_opt_device", "abi::regen_device", "Option<Device>"),
    info(ArgKind::DeviceIndex, "int64_t", "lift_device_index", "i64", "i64"),
    info(ArgKind::MemoryFormat, "int32_t", "lift_enum", "i32", "MemoryFormat"),
    info(ArgKind::OptionalMemoryFormat, "int32_t", "lift_opt_enum", "i32", "Option<MemoryFormat>"),
    info(ArgKind::Generator, "void*", "lift_generator", "*mut ::std::ffi::c_void", "Generator"),
    info(ArgKind::OptionalGenerator, "void*", "lift_opt_generator", "*mut ::std::ffi::c_void", "Option<Generator>"),
    info(ArgKind::Storage, "void*", "lift_storage", "*mut ::std::ffi::c_void", "Storage"),
    info(ArgKind::Stream, "regen_stream", "lift_stream", "abi::regen_stream", "Stream"),
    info(ArgKind::Dimname, "regen_str", "lift_dimname", "abi::regen_str", "&str"),
    info(ArgKind::DimnameList, "regen_str_list", "lift_dimname_list", "abi::regen_str_list", "Vec<&str>"),
    info(ArgKind::OptionalDimnameList, "regen_str_list", "lift_opt_dimname_list", "abi::regen_str_list", "Option<Vec<&str>>"),
];

impl ArgKind {
    pub fn info(self) -> &'static ArgKindInfo {
        ARG_KIND_INFO.iter().find(|i| i.kind == self).expect("every ArgKind has an ARG_KIND_INFO row")
    }
}

/// How one element of an op's result crosses back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetKind {
    /// A new tensor, returned through a `regen_tensor*` slot.
    Tensor,
    /// `Tensor &`: the wrapper returns its own argument number `.0`; nothing crosses.
    TensorRef(usize),
    /// `::std::vector<at::Tensor>`, pushed into a `regen_tensor_sink`.
    TensorVec,
    Int,
    /// `::std::vector<int64_t>`, pushed into a `regen_i64_sink`.
    IntVec,
    Float,
    Bool,
    ScalarType,
    QScheme,
    Scalar,
    SymInt,
    SymBool,
}

impl RetKind {
    /// The type of the out-slot parameter in C, or `None` when nothing crosses.
    pub fn c_slot_type(&self) -> Option<&'static str> {
        self.slot().map(|s| s.0)
    }

    /// The out-slot parameter type in Rust.
    pub fn rust_slot_type(&self) -> Option<&'static str> {
        self.slot().map(|s| s.1)
    }

    /// The kernel's safe result type.
    pub fn rust_safe_type(&self) -> Option<&'static str> {
        self.slot().map(|s| s.2)
    }

    /// (C slot, Rust slot, Rust result) for each kind that crosses.
    fn slot(&self) -> Option<(&'static str, &'static str, &'static str)> {
        Some(match self {
            RetKind::Tensor => ("regen_tensor*", "*mut abi::regen_tensor", "Tensor"),
            RetKind::TensorRef(_) => return None,
            RetKind::TensorVec => ("regen_tensor_sink", "abi::regen_tensor_sink", "Vec<Tensor>"),
            RetKind::Int | RetKind::SymInt => ("int64_t*", "*mut i64", "i64"),
            RetKind::IntVec => ("regen_i64_sink", "abi::regen_i64_sink", "Vec<i64>"),
            RetKind::Float => ("double*", "*mut f64", "f64"),
            RetKind::Bool | RetKind::SymBool => ("bool*", "*mut bool", "bool"),
            RetKind::ScalarType => ("int32_t*", "*mut i32", "ScalarType"),
            RetKind::QScheme => ("int32_t*", "*mut i32", "QScheme"),
            RetKind::Scalar => ("regen_scalar*", "*mut abi::regen_scalar", "Scalar"),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiArg {
    pub name: String,
    pub kind: ArgKind,
    /// Written through (`Tensor(a!)`): the Rust side receives it as a mutable tensor.
    pub mutable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiReturn {
    pub kind: RetKind,
    /// The C++ element type, e.g. `at::Tensor` or `at::Tensor &`.
    pub cpp_type: String,
}

/// An op's calling convention across the C ABI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiOp {
    pub args: Vec<AbiArg>,
    pub returns: Vec<AbiReturn>,
    /// The C++ return is a `::std::tuple<...>` (as opposed to one value or `void`).
    pub returns_tuple: bool,
}

/// Why an op cannot cross the ABI. Only types no release has used yet end up here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub reason: String,
}

/// `const at::Tensor &` → `Tensor`; `::std::array<bool,3>` → `array<bool,N>`.
pub fn normalize(ty: &CppType) -> String {
    let mut out = String::new();
    normalize_into(ty, &mut out);
    out
}

fn normalize_into(ty: &CppType, out: &mut String) {
    let path = ty.path.trim_start_matches("::");
    let last = ["std::", "c10::", "at::"].iter().fold(path, |p, q| p.strip_prefix(q).unwrap_or(p));
    out.push_str(last);
    if ty.template_args.is_empty() {
        return;
    }
    out.push('<');
    for (k, arg) in ty.template_args.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        match arg {
            CppTemplateArg::Type(t) => normalize_into(t, out),
            CppTemplateArg::Value(_) => out.push('N'),
        }
    }
    out.push('>');
}

pub fn arg_kind(ty: &CppType) -> Option<ArgKind> {
    let key = normalize(ty);
    ARG_TYPES.iter().find(|(k, _)| *k == key).map(|(_, kind)| *kind)
}

/// Lowers an op's C++ signature to its ABI form.
pub fn lower_abi(op: &Op) -> Result<AbiOp, Unsupported> {
    let mut args = Vec::with_capacity(op.cpp.params.len());
    for (param, arg) in op.cpp.params.iter().zip(&op.schema.arguments) {
        let kind = arg_kind(&param.ty).ok_or_else(|| Unsupported {
            reason: format!("C++ parameter type `{}` of `{}` has no ABI mapping", param.ty.spelling, param.name),
        })?;
        let mutable = arg.annotation.as_ref().is_some_and(|a| a.is_write);
        args.push(AbiArg { name: param.name.to_string(), kind, mutable });
    }
    let ret = &op.cpp.return_type;
    let (elements, returns_tuple): (Vec<&CppType>, bool) = match normalize(ret).as_str() {
        "void" => (Vec::new(), false),
        n if n.starts_with("tuple<") => (
            ret.template_args
                .iter()
                .filter_map(|a| match a {
                    CppTemplateArg::Type(t) => Some(t),
                    CppTemplateArg::Value(_) => None,
                })
                .collect(),
            true,
        ),
        _ => (vec![ret], false),
    };
    let mut returns = Vec::with_capacity(elements.len());
    for (k, element) in elements.iter().enumerate() {
        let kind = ret_kind(op, element, k)?;
        returns.push(AbiReturn { kind, cpp_type: element.spelling.clone() });
    }
    Ok(AbiOp { args, returns, returns_tuple })
}

fn ret_kind(op: &Op, ty: &CppType, index: usize) -> Result<RetKind, Unsupported> {
    let key = normalize(ty);
    if ty.indirection == CppIndirection::Reference {
        if key != "Tensor" {
            return Err(Unsupported { reason: format!("returns a reference to `{}`", ty.spelling) });
        }
        // The returned reference is the argument sharing the return's alias set.
        let alias = op.schema.returns.items.get(index).and_then(|r| r.annotation.as_ref()).map(|a| &a.alias_set);
        let arg = alias.and_then(|set| {
            op.schema.arguments.iter().position(|a| a.annotation.as_ref().is_some_and(|x| &x.alias_set == set))
        });
        return arg.map(RetKind::TensorRef).ok_or_else(|| Unsupported {
            reason: format!("return {index} is a reference but no argument shares its alias annotation"),
        });
    }
    Ok(match key.as_str() {
        "Tensor" => RetKind::Tensor,
        "vector<Tensor>" => RetKind::TensorVec,
        "int64_t" => RetKind::Int,
        "vector<int64_t>" => RetKind::IntVec,
        "double" => RetKind::Float,
        "bool" => RetKind::Bool,
        "ScalarType" => RetKind::ScalarType,
        "QScheme" => RetKind::QScheme,
        "Scalar" => RetKind::Scalar,
        "SymInt" => RetKind::SymInt,
        "SymBool" => RetKind::SymBool,
        _ => return Err(Unsupported { reason: format!("C++ return type `{}` has no ABI mapping", ty.spelling) }),
    })
}
