//! The op model: the one intermediate representation every emitter reads.
//!
//! Parsing produces the schema and C++ ASTs below; `lower` assembles them into [`Model`].
//! Nothing downstream of this module looks at the header's text again.

use std::fmt;
use std::sync::Arc;

use crate::policy::Family;

/// Names, overloads and defaults: short strings, stored inline (no allocation up to 24 bytes),
/// which keeps parsing the whole header within its few-millisecond budget.
pub type Ident = compact_str::CompactString;

/// A parsed `aten::name.overload(args) -> returns` schema.
///
/// `Display` prints it back byte for byte as PyTorch wrote it (tested on every fixture).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub namespace: Ident,
    pub name: Ident,
    /// `""` when the op has no overload name.
    pub overload: Ident,
    pub arguments: Vec<Argument>,
    pub returns: Returns,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    pub name: Ident,
    pub ty: SchemaType,
    pub annotation: Option<Annotation>,
    /// The default exactly as written in the schema (string literals keep their quotes).
    pub default: Option<Ident>,
    /// Declared after the `*` marker.
    pub kwarg_only: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Returns {
    pub items: Vec<Return>,
    /// `(Tensor a, Tensor b)` and `()` are parenthesized; a lone `Tensor` is not.
    pub parenthesized: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Return {
    pub name: Option<Ident>,
    pub ty: SchemaType,
    pub annotation: Option<Annotation>,
}

/// An alias annotation such as `a`, `a!`, `a -> *` or `a|b!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub alias_set: Vec<Ident>,
    pub is_write: bool,
    /// The alias set after `->` (`["*"]` for `a -> *`); empty when there is no arrow.
    pub alias_set_after: Vec<Ident>,
}

/// A schema type. Nesting depth is bounded by the parser, so recursion over it is safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaType {
    Base(BaseType),
    /// `T?`
    Optional(Box<SchemaType>),
    /// `T[]` (size `None`) or `T[N]`.
    List(Box<SchemaType>, Option<u32>),
}

/// The base types PyTorch releases have used in this header, plus an opaque fallback
/// for names a future release introduces (the way 2.9 introduced `SymBool`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BaseType {
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    Scalar,
    ScalarType,
    Layout,
    Device,
    DeviceIndex,
    MemoryFormat,
    Generator,
    Dimname,
    SymInt,
    SymBool,
    Storage,
    Stream,
    QScheme,
    /// A name this model does not know; kept verbatim and reported as a warning.
    Opaque(String),
}

/// Every known base type with its schema spelling: one table, used both ways.
pub const KNOWN_BASE_TYPES: &[(&str, BaseType)] = &[
    ("Tensor", BaseType::Tensor),
    ("int", BaseType::Int),
    ("float", BaseType::Float),
    ("bool", BaseType::Bool),
    ("str", BaseType::Str),
    ("Scalar", BaseType::Scalar),
    ("ScalarType", BaseType::ScalarType),
    ("Layout", BaseType::Layout),
    ("Device", BaseType::Device),
    ("DeviceIndex", BaseType::DeviceIndex),
    ("MemoryFormat", BaseType::MemoryFormat),
    ("Generator", BaseType::Generator),
    ("Dimname", BaseType::Dimname),
    ("SymInt", BaseType::SymInt),
    ("SymBool", BaseType::SymBool),
    ("Storage", BaseType::Storage),
    ("Stream", BaseType::Stream),
    ("QScheme", BaseType::QScheme),
];

impl BaseType {
    pub fn from_name(name: &str) -> BaseType {
        KNOWN_BASE_TYPES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| BaseType::Opaque(name.to_owned()))
    }

    pub fn name(&self) -> &str {
        match self {
            BaseType::Opaque(n) => n,
            known => {
                KNOWN_BASE_TYPES
                    .iter()
                    .find(|(_, t)| t == known)
                    .expect("every non-opaque base type is in KNOWN_BASE_TYPES")
                    .0
            }
        }
    }
}

impl SchemaType {
    /// The innermost base type (`Tensor` for `Tensor?[]`).
    pub fn base(&self) -> &BaseType {
        match self {
            SchemaType::Base(b) => b,
            SchemaType::Optional(t) | SchemaType::List(t, _) => t.base(),
        }
    }

    /// Writes the `?`/`[]`/`[N]` suffixes, innermost first.
    fn fmt_suffixes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaType::Base(_) => Ok(()),
            SchemaType::Optional(t) => {
                t.fmt_suffixes(f)?;
                f.write_str("?")
            }
            SchemaType::List(t, size) => {
                t.fmt_suffixes(f)?;
                match size {
                    Some(n) => write!(f, "[{n}]"),
                    None => f.write_str("[]"),
                }
            }
        }
    }

    /// Prints the type with an alias annotation between the base and the suffixes,
    /// where the schema grammar puts it (`Tensor(a!)[]`).
    pub fn display_with<'a>(&'a self, annotation: Option<&'a Annotation>) -> impl fmt::Display + 'a {
        struct D<'a>(&'a SchemaType, Option<&'a Annotation>);
        impl fmt::Display for D<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0.base().name())?;
                if let Some(a) = self.1 {
                    write!(f, "({a})")?;
                }
                self.0.fmt_suffixes(f)
            }
        }
        D(self, annotation)
    }
}

impl fmt::Display for SchemaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.display_with(None).fmt(f)
    }
}

impl fmt::Display for Annotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_aliases(f, &self.alias_set)?;
        if self.is_write {
            f.write_str("!")?;
        }
        if !self.alias_set_after.is_empty() {
            f.write_str(" -> ")?;
            write_aliases(f, &self.alias_set_after)?;
        }
        Ok(())
    }
}

fn write_aliases(f: &mut fmt::Formatter<'_>, set: &[Ident]) -> fmt::Result {
    for (k, alias) in set.iter().enumerate() {
        if k > 0 {
            f.write_str("|")?;
        }
        f.write_str(alias)?;
    }
    Ok(())
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.ty.display_with(self.annotation.as_ref()), self.name)?;
        if let Some(d) = &self.default {
            write!(f, "={d}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Return {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ty.display_with(self.annotation.as_ref()).fmt(f)?;
        if let Some(n) = &self.name {
            write!(f, " {n}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{}", self.namespace, self.name)?;
        if !self.overload.is_empty() {
            write!(f, ".{}", self.overload)?;
        }
        f.write_str("(")?;
        let mut seen_kwarg = false;
        for (i, a) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if a.kwarg_only && !seen_kwarg {
                seen_kwarg = true;
                f.write_str("*, ")?;
            }
            a.fmt(f)?;
        }
        f.write_str(") -> ")?;
        if self.returns.parenthesized {
            f.write_str("(")?;
        }
        for (i, r) in self.returns.items.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            r.fmt(f)?;
        }
        if self.returns.parenthesized {
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl Schema {
    /// `name.overload`, or `name` when there is no overload: the key ops are known by.
    pub fn key(&self) -> String {
        if self.overload.is_empty() { self.name.to_string() } else { format!("{}.{}", self.name, self.overload) }
    }
}

/// A parsed C++ declaration: `RET name(TYPE param, ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CppDecl {
    /// Shared: a release spells only about a hundred distinct C++ types.
    pub return_type: Arc<CppType>,
    pub name: Ident,
    pub params: Vec<CppParam>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CppParam {
    pub ty: Arc<CppType>,
    pub name: Ident,
}

/// A C++ type such as `const c10::List<::std::optional<at::Tensor>> &`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CppType {
    /// Exactly as written in the header (what a registration must repeat).
    pub spelling: String,
    pub is_const: bool,
    /// The qualified name, e.g. `::std::optional` or `int64_t`.
    pub path: String,
    pub template_args: Vec<CppTemplateArg>,
    pub indirection: CppIndirection,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CppTemplateArg {
    Type(CppType),
    /// A non-type argument such as the `3` of `::std::array<bool,3>`.
    Value(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CppIndirection {
    None,
    Reference,
    Pointer,
}

/// How an op relates to a backend, from the header's `dispatch`/`default` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpClass {
    /// dispatch=True, default=False: a backend must register a kernel.
    Required,
    /// dispatch=True, default=True: PyTorch has a default kernel a backend may override.
    HasDefault,
    /// dispatch=False: composite-implicit, decomposed above the backend.
    CompositeImplicit,
}

impl OpClass {
    pub fn from_flags(dispatch: bool, default: bool) -> OpClass {
        match (dispatch, default) {
            (true, false) => OpClass::Required,
            (true, true) => OpClass::HasDefault,
            (false, _) => OpClass::CompositeImplicit,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OpClass::Required => "required",
            OpClass::HasDefault => "has_default",
            OpClass::CompositeImplicit => "composite_implicit",
        }
    }
}

/// The shape of an op's effect, following torchgen's `SchemaKind` plus views.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Functional,
    /// `foo_`: mutates `self` and returns it.
    InPlace,
    /// Writes into kwarg-only `out` arguments.
    Out,
    /// Mutates some argument without being in-place or out (e.g. `_amp_update_scale_`'s state).
    Mutable,
    /// Returns an alias of an input (annotation without `!`).
    View,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Functional => "functional",
            OpKind::InPlace => "inplace",
            OpKind::Out => "out",
            OpKind::Mutable => "mutable",
            OpKind::View => "view",
        }
    }
}

/// One op of the header, keyed by `name.overload`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// `name.overload`, or `name` when the overload is empty (a custom op's is `ns::name.overload`).
    /// Derivable from `schema`, but stored: ops are looked up by key, and deriving it per comparison
    /// made looking up the device config's 548 names in 2.15.0 take 40 ms instead of 0.7 ms
    /// (generation as a whole takes 170 ms).
    pub key: String,
    /// The schema string exactly as the header's metadata holds it (after JSON unescaping).
    pub schema_text: String,
    pub schema: Schema,
    pub cpp: CppDecl,
    /// The header's `dispatch` and `default` flags, as given; [`Op::class`] derives from them.
    pub dispatch: bool,
    pub default: bool,
    pub kind: OpKind,
    /// A backend-specific family (`cudnn`, `sparse`, ...) a host-memory backend usually skips.
    pub family: Option<Family>,
    pub rust_name: String,
    /// 1-based line of the declaration in the header.
    pub line: u32,
}

impl Op {
    pub fn name(&self) -> &str {
        &self.schema.name
    }
    pub fn overload(&self) -> &str {
        &self.schema.overload
    }
    /// How the op relates to a backend, from its flags.
    pub fn class(&self) -> OpClass {
        OpClass::from_flags(self.dispatch, self.default)
    }
    pub fn is_required(&self) -> bool {
        self.class() == OpClass::Required
    }
    /// `namespace::name.overload`; a custom op's key already is.
    pub fn qualified(&self) -> String {
        if self.key.contains("::") { self.key.clone() } else { qualified_name(&self.schema.namespace, &self.key) }
    }
}

/// `namespace::key`: how an op is named to the dispatcher and in error messages.
pub fn qualified_name(namespace: &str, key: &str) -> String {
    format!("{namespace}::{key}")
}

/// Every op of one header, in header order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub ops: Vec<Op>,
}

impl Model {
    pub fn find(&self, key: &str) -> Option<&Op> {
        self.ops.iter().find(|op| op.key == key)
    }

    pub fn required(&self) -> impl Iterator<Item = &Op> {
        self.ops.iter().filter(|op| op.is_required())
    }
}
