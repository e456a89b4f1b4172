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

impl ArgKind {
    /// The kind's spellings side by side: (C type in `regen_abi.h`, the `regen::lift_*` helper of
    /// `regen_marshal.h` that produces it, the entry point's parameter type in Rust (the
    /// `regen_runtime::abi` mirror), the kernel trait's safe argument type).
    #[rustfmt::skip]
    const fn spellings(self) -> (&'static str, &'static str, &'static str, &'static str) {
        use ArgKind::*;
        match self {
            Tensor =>               ("regen_tensor",      "lift_tensor",           "abi::regen_tensor",       "TensorRef<'_>"),
            OptionalTensor =>       ("regen_tensor",      "lift_opt_tensor",       "abi::regen_tensor",       "Option<TensorRef<'_>>"),
            TensorList =>           ("regen_tensor_list", "lift_tensor_list",      "abi::regen_tensor_list",  "TensorList<'_>"),
            OptionalTensorList =>   ("regen_tensor_list", "lift_opt_tensor_list",  "abi::regen_tensor_list",  "OptionalTensorList<'_>"),
            Scalar =>               ("regen_scalar",      "lift_scalar",           "abi::regen_scalar",       "Scalar"),
            OptionalScalar =>       ("regen_scalar",      "lift_opt_scalar",       "abi::regen_scalar",       "Option<Scalar>"),
            ScalarList =>           ("regen_scalar_list", "lift_scalar_list",      "abi::regen_scalar_list",  "Vec<Scalar>"),
            Int =>                  ("int64_t",           "lift_int",              "i64",                     "i64"),
            OptionalInt =>          ("regen_opt_i64",     "lift_opt_int",          "abi::regen_opt_i64",      "Option<i64>"),
            IntList =>              ("regen_i64_list",    "lift_int_list",         "abi::regen_i64_list",     "&[i64]"),
            OptionalIntList =>      ("regen_i64_list",    "lift_opt_int_list",     "abi::regen_i64_list",     "Option<&[i64]>"),
            Float =>                ("double",            "lift_plain",            "f64",                     "f64"),
            OptionalFloat =>        ("regen_opt_f64",     "lift_opt_float",        "abi::regen_opt_f64",      "Option<f64>"),
            FloatList =>            ("regen_f64_list",    "lift_float_list",       "abi::regen_f64_list",     "&[f64]"),
            OptionalFloatList =>    ("regen_f64_list",    "lift_opt_float_list",   "abi::regen_f64_list",     "Option<&[f64]>"),
            Bool =>                 ("bool",              "lift_plain",            "bool",                    "bool"),
            OptionalBool =>         ("regen_opt_bool",    "lift_opt_bool",         "abi::regen_opt_bool",     "Option<bool>"),
            BoolArray =>            ("regen_bool_list",   "lift_bool_array",       "abi::regen_bool_list",    "&[bool]"),
            Str =>                  ("regen_str",         "lift_str",              "abi::regen_str",          "&str"),
            OptionalStr =>          ("regen_str",         "lift_opt_str",          "abi::regen_str",          "Option<&str>"),
            ScalarType =>           ("int32_t",           "lift_enum",             "i32",                     "ScalarType"),
            OptionalScalarType =>   ("int32_t",           "lift_opt_enum",         "i32",                     "Option<ScalarType>"),
            Layout =>               ("int32_t",           "lift_enum",             "i32",                     "Layout"),
            OptionalLayout =>       ("int32_t",           "lift_opt_enum",         "i32",                     "Option<Layout>"),
            Device =>               ("regen_device",      "lift_device",           "abi::regen_device",       "Device"),
            OptionalDevice =>       ("regen_device",      "lift_opt_device",       "abi::regen_device",       "Option<Device>"),
            DeviceIndex =>          ("int64_t",           "lift_device_index",     "i64",                     "i64"),
            MemoryFormat =>         ("int32_t",           "lift_enum",             "i32",                     "MemoryFormat"),
            OptionalMemoryFormat => ("int32_t",           "lift_opt_enum",         "i32",                     "Option<MemoryFormat>"),
            Generator =>            ("void*",             "lift_generator",        "*mut ::std::ffi::c_void", "Generator"),
            OptionalGenerator =>    ("void*",             "lift_opt_generator",    "*mut ::std::ffi::c_void", "Option<Generator>"),
            Storage =>              ("void*",             "lift_storage",          "*mut ::std::ffi::c_void", "Storage"),
            Stream =>               ("regen_stream",      "lift_stream",           "abi::regen_stream",       "Stream"),
            Dimname =>              ("regen_str",         "lift_dimname",          "abi::regen_str",          "&str"),
            DimnameList =>          ("regen_str_list",    "lift_dimname_list",     "abi::regen_str_list",     "Vec<&str>"),
            OptionalDimnameList =>  ("regen_str_list",    "lift_opt_dimname_list", "abi::regen_str_list",     "Option<Vec<&str>>"),
        }
    }

    /// The parameter's type in `regen_abi.h`.
    pub const fn c_type(self) -> &'static str {
        self.spellings().0
    }

    /// The `regen::lift_*` helper of `regen_marshal.h` that produces it from the C++ argument.
    pub const fn cpp_lift(self) -> &'static str {
        self.spellings().1
    }

    /// The entry point's parameter type in Rust (`regen_runtime::abi` mirror).
    pub const fn rust_abi(self) -> &'static str {
        self.spellings().2
    }

    /// The kernel trait's safe argument type.
    pub const fn rust_safe(self) -> &'static str {
        self.spellings().3
    }
}

// `ARG_TYPES` reaches every kind: a kind no C++ spelling maps to would be dead code in every
// emitter. Kinds are numbered 0..=OptionalDimnameList in declaration order (a new last variant
// must take that place here).
const _: () = {
    let mut k = 0;
    while k <= ArgKind::OptionalDimnameList as usize {
        let mut reached = false;
        let mut t = 0;
        while t < ARG_TYPES.len() {
            reached |= ARG_TYPES[t].1 as usize == k;
            t += 1;
        }
        assert!(reached, "every ArgKind has a C++ spelling in ARG_TYPES");
        k += 1;
    }
};

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

/// Every spelling of a result that crosses the ABI, side by side: the C out-slot, the C++ wrapper's
/// local behind it and how the wrapper passes it and rebuilds its return value, and the Rust slot
/// and result types. `templates/register.cpp` spells the wrapper from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetSpelling {
    /// The out-slot parameter's type in `regen_abi.h`.
    pub c_slot: &'static str,
    /// The type of the wrapper's local the kernel writes into.
    pub cpp_local: &'static str,
    /// The local's initialiser (`0`, `::regen::no_tensor()`), if it has one.
    pub cpp_init: Option<&'static str>,
    /// How the local is passed: `None` by address (`&local`); `Some(f)` as `f(local)`, a sink the
    /// kernel pushes into (the local is a vector then, worth moving into a returned tuple).
    pub cpp_sink: Option<&'static str>,
    /// What rebuilds the C++ result from the local: `None` the local itself, `Some(f)` `f(local)`.
    pub cpp_rebuild: Option<&'static str>,
    /// The out-slot parameter's type in Rust.
    pub rust_slot: &'static str,
    /// The kernel's safe result type.
    pub rust_safe: &'static str,
}

/// How one result element gets back to the C++ wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crossing {
    /// Through an out-slot, spelled so.
    Slot(RetSpelling),
    /// Not at all: the wrapper returns its own argument number `.0` (`Tensor &`).
    Alias(usize),
}

impl RetKind {
    /// How the result crosses, with every spelling of a crossing one.
    #[rustfmt::skip]
    pub const fn crossing(&self) -> Crossing {
        const fn slot(
            c_slot: &'static str,
            cpp_local: &'static str,
            cpp_init: Option<&'static str>,
            cpp_sink: Option<&'static str>,
            cpp_rebuild: Option<&'static str>,
            rust_slot: &'static str,
            rust_safe: &'static str,
        ) -> Crossing {
            Crossing::Slot(RetSpelling { c_slot, cpp_local, cpp_init, cpp_sink, cpp_rebuild, rust_slot, rust_safe })
        }
        match self {
            //                              C slot,               C++ local,                    initialiser,                   sink,                           rebuilt by,                             Rust slot,                 Rust result
            RetKind::Tensor => slot(        "regen_tensor*",      "regen_tensor",               Some("::regen::no_tensor()"), None,                           Some("::regen::adopt"),                 "*mut abi::regen_tensor",  "Tensor"),
            RetKind::TensorRef(arg) => Crossing::Alias(*arg),
            RetKind::TensorVec => slot(     "regen_tensor_sink",  "::std::vector<at::Tensor>",  None,                          Some("::regen::tensor_sink"),   None,                                   "abi::regen_tensor_sink",  "Vec<Tensor>"),
            RetKind::Int => slot(           "int64_t*",           "int64_t",                    Some("0"),                     None,                           None,                                   "*mut i64",                "i64"),
            RetKind::SymInt => slot(        "int64_t*",           "int64_t",                    Some("0"),                     None,                           Some("c10::SymInt"),                    "*mut i64",                "i64"),
            RetKind::IntVec => slot(        "regen_i64_sink",     "::std::vector<int64_t>",     None,                          Some("::regen::i64_sink"),      None,                                   "abi::regen_i64_sink",     "Vec<i64>"),
            RetKind::Float => slot(         "double*",            "double",                     Some("0"),                     None,                           None,                                   "*mut f64",                "f64"),
            RetKind::Bool => slot(          "bool*",              "bool",                       Some("false"),                 None,                           None,                                   "*mut bool",               "bool"),
            RetKind::SymBool => slot(       "bool*",              "bool",                       Some("false"),                 None,                           Some("c10::SymBool"),                   "*mut bool",               "bool"),
            RetKind::ScalarType => slot(    "int32_t*",           "int32_t",                    Some("0"),                     None,                           Some("static_cast<at::ScalarType>"),    "*mut i32",                "ScalarType"),
            RetKind::QScheme => slot(       "int32_t*",           "int32_t",                    Some("0"),                     None,                           Some("static_cast<at::QScheme>"),       "*mut i32",                "QScheme"),
            RetKind::Scalar => slot(        "regen_scalar*",      "regen_scalar",               Some("::regen::no_scalar()"),  None,                           Some("::regen::from_c"),                "*mut abi::regen_scalar",  "Scalar"),
        }
    }

    /// Every spelling of the result, or `None` when nothing crosses.
    pub const fn spelling(&self) -> Option<RetSpelling> {
        match self.crossing() {
            Crossing::Slot(s) => Some(s),
            Crossing::Alias(_) => None,
        }
    }

    /// The type of the out-slot parameter in C, or `None` when nothing crosses.
    pub fn c_slot_type(&self) -> Option<&'static str> {
        self.spelling().map(|s| s.c_slot)
    }

    /// The out-slot parameter type in Rust.
    pub fn rust_slot_type(&self) -> Option<&'static str> {
        self.spelling().map(|s| s.rust_slot)
    }

    /// The kernel's safe result type.
    pub fn rust_safe_type(&self) -> Option<&'static str> {
        self.spelling().map(|s| s.rust_safe)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbiArg {
    pub name: String,
    pub kind: ArgKind,
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
    for param in &op.cpp.params {
        let kind = arg_kind(&param.ty).ok_or_else(|| Unsupported {
            reason: format!("C++ parameter type `{}` of `{}` has no ABI mapping", param.ty.spelling, param.name),
        })?;
        args.push(AbiArg { name: param.name.to_string(), kind });
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
