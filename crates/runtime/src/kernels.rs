//! [`kernels!`](macro@crate::kernels): what a generated `kernels.rs` expands to.
//!
//! regen writes one row per op with a C++ wrapper (its schema, counter, names, argument and result
//! types); this macro spells the repetitive rest once: the `Kernels` trait, the `extern "C"`
//! entry points that convert arguments, call the kernel and write results back, the call
//! counters and `install`. Keeping the bodies here instead of in every generated file makes
//! `kernels.rs` a fifth of its former size and lets regen write it without a Rust formatter.
//!
//! A row reads
//! ```text
//! /// `aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)`
//! 11 kernel "add.out" "aten::add.out" regen_kernel_add_out
//!     fn add_out(self_: TensorRef<'_> = abi::regen_tensor, ...) -> () {};
//! ```
//! `11` is the op's counter, `kernel` says the backend implements it (`stub`: a default method
//! raising NotImplementedError), then the key (`name.overload`), the qualified name, the entry
//! point's symbol, the trait method with each argument's safe type `=` its ABI type, and the
//! result type with, in braces, a value binding and its out-slot parameter for each result that
//! crosses back.
//!
//! With kernel groups (`[implement]` as a table in regen.toml) the rows come in blocks, one
//! `kernels { ... }` for the `Kernels` trait's own methods and one `group NameKernels { ... }` per
//! group; each group is a trait of its own and `Kernels` their sum. A kernel library's groups
//! (`[reference]`) come last, as `call <lib::Reference as lib::NameKernels> { ... }`; the library
//! itself expands its `groups.rs` with [`kernel_groups!`](macro@crate::kernel_groups).

/// Expands a generated `kernels.rs` (see the [module](mod@crate::kernels) docs for the row syntax).
/// The names it defines (`Kernels`, `OPS`, `install`, `native_calls`, and one trait per kernel
/// group) are the backend's API; the argument types a row names must be in scope where it expands
/// (the generated file imports them).
///
/// Rows are either all at the top (a flat `implement` list: every method is `Kernels`'), or in
/// blocks: `kernels { rows }` for `Kernels`' own methods (ops without a group, stubs, custom ops),
/// then `group UnaryKernels { rows }` for each group of `[implement]`, whose ops become the
/// required methods of a trait of that name. `Kernels` is then the sum of the group traits, so a
/// backend writes one plain `impl UnaryKernels for Backend { ... }` per group, in its own file.
/// Last, `call <regen_kernels::Reference as regen_kernels::UnaryKernels> { rows }` for each group
/// a kernel library provides (regen.toml `[reference]`): its trait is the library's
/// ([`kernel_groups!`](macro@crate::kernel_groups)), not part of `Kernels`, and the entry points
/// call the library's implementation (a unit struct with `Default`) directly.
/// Counters run through the blocks in order.
#[macro_export]
macro_rules! kernels {
    (
        kernels {
            $(
                $(#[doc = $doc:literal])*
                $k:literal $state:ident $key:literal $qualified:literal $symbol:ident
                fn $method:ident($($arg:ident: $safe:ty = $abi:ty),* $(,)?) -> $ret:ty {
                    $($value:ident => $slot:ident: $slot_ty:ty),* $(,)?
                };
            )*
        }
        $(
            $(#[doc = $gdoc:literal])*
            group $group:ident {
                $(
                    $(#[doc = $gmdoc:literal])*
                    $gk:literal kernel $gkey:literal $gqualified:literal $gsymbol:ident
                    fn $gmethod:ident($($garg:ident: $gsafe:ty = $gabi:ty),* $(,)?) -> $gret:ty {
                        $($gvalue:ident => $gslot:ident: $gslot_ty:ty),* $(,)?
                    };
                )*
            }
        )*
        $(
            call <$library:ty as $ltrait:path> {
                $(
                    $(#[doc = $lmdoc:literal])*
                    $lk:literal kernel $lkey:literal $lqualified:literal $lsymbol:ident
                    fn $lmethod:ident($($larg:ident: $lsafe:ty = $labi:ty),* $(,)?) -> $lret:ty {
                        $($lvalue:ident => $lslot:ident: $lslot_ty:ty),* $(,)?
                    };
                )*
            }
        )*
    ) => {
        /// The backend's kernels, one method per registered op, documented with its schema: the
        /// methods of its kernel groups' traits, if it has groups, and its own.
        /// Methods with a default body are not implemented yet: they raise NotImplementedError.
        // Method names are PyTorch's op names (`from_file`, `to_mkldnn`), not Rust conventions.
        #[allow(
            unused_variables,
            clippy::too_many_arguments,
            clippy::type_complexity,
            clippy::wrong_self_convention,
            clippy::should_implement_trait
        )]
        pub trait Kernels: $($group +)* Send + Sync + 'static {
            $(
                $crate::__kernel_method! {
                    $state $key $(#[doc = $doc])* fn $method($($arg: $safe),*) -> $ret
                }
            )*
        }

        $crate::kernel_groups! {
            $(
                $(#[doc = $gdoc])*
                group $group {
                    $(
                        $(#[doc = $gmdoc])*
                        $gk kernel $gkey $gqualified $gsymbol
                        fn $gmethod($($garg: $gsafe = $gabi),*) -> $gret { $($gvalue => $gslot: $gslot_ty),* };
                    )*
                }
            )*
        }

        static KERNELS: ::std::sync::OnceLock<::std::boxed::Box<dyn Kernels>> = ::std::sync::OnceLock::new();

        /// The ops with a Rust entry point here (`name.overload`), in the order of their counters.
        pub const OPS: &[&str] = &[$($key,)* $($($gkey,)*)* $($($lkey,)*)*];

        /// How many times each entry point was called.
        static CALLS: [::std::sync::atomic::AtomicU64; OPS.len()] =
            [const { ::std::sync::atomic::AtomicU64::new(0) }; OPS.len()];

        /// Installs the backend's kernels and its call counters; the first installation wins
        /// (returns false after).
        pub fn install(kernels: impl Kernels) -> bool {
            $crate::ffi::set_native_calls(native_calls);
            KERNELS.set(::std::boxed::Box::new(kernels)).is_ok()
        }

        /// How many times the Rust kernel of `op` (`name.overload`) was called; `None` when `op`
        /// has no entry point in this backend.
        pub fn native_calls(op: &str) -> ::std::option::Option<u64> {
            OPS.iter().position(|o| *o == op).map(|k| CALLS[k].load(::std::sync::atomic::Ordering::Relaxed))
        }

        fn kernels() -> $crate::Result<&'static dyn Kernels> {
            KERNELS
                .get()
                .map(|k| &**k)
                .ok_or_else(|| $crate::Error::runtime("no kernels installed: call install() at load time"))
        }

        $(
            $crate::__kernel_entry! {
                (<dyn Kernels as Kernels>) (kernels()?)
                $k $qualified $symbol $method($($arg: $safe = $abi),*) { $($value => $slot: $slot_ty),* }
            }
        )*
        $($(
            $crate::__kernel_entry! {
                (<dyn Kernels as $group>) (kernels()?)
                $gk $gqualified $gsymbol $gmethod($($garg: $gsafe = $gabi),*) { $($gvalue => $gslot: $gslot_ty),* }
            }
        )*)*
        $($(
            $crate::__kernel_entry! {
                (<$library as $ltrait>) (&<$library as ::core::default::Default>::default())
                $lk $lqualified $lsymbol $lmethod($($larg: $lsafe = $labi),*) { $($lvalue => $lslot: $lslot_ty),* }
            }
        )*)*
    };
    // A flat list of rows: all of them `Kernels`' own.
    (
        $(
            $(#[doc = $doc:literal])*
            $k:literal $state:ident $key:literal $qualified:literal $symbol:ident
            fn $method:ident($($arg:ident: $safe:ty = $abi:ty),* $(,)?) -> $ret:ty {
                $($value:ident => $slot:ident: $slot_ty:ty),* $(,)?
            };
        )*
    ) => {
        $crate::kernels! {
            kernels {
                $(
                    $(#[doc = $doc])*
                    $k $state $key $qualified $symbol
                    fn $method($($arg: $safe = $abi),*) -> $ret { $($value => $slot: $slot_ty),* };
                )*
            }
        }
    };
}

/// Expands a kernel library's generated `groups.rs`: one trait per kernel group of its
/// `[implement]` (`group UnaryKernels { rows }`, rows as in [`kernels!`](macro@crate::kernels)),
/// each op a required method. The library implements them for its `Reference` type; a backend
/// whose regen.toml names the library in `[reference]` calls them from its own entry points, and
/// a backend's own groups expand through this macro too.
#[macro_export]
macro_rules! kernel_groups {
    (
        $(
            $(#[doc = $gdoc:literal])*
            group $group:ident {
                $(
                    $(#[doc = $gmdoc:literal])*
                    $gk:literal kernel $gkey:literal $gqualified:literal $gsymbol:ident
                    fn $gmethod:ident($($garg:ident: $gsafe:ty = $gabi:ty),* $(,)?) -> $gret:ty {
                        $($gvalue:ident => $gslot:ident: $gslot_ty:ty),* $(,)?
                    };
                )*
            }
        )*
    ) => {
        $(
            $(#[doc = $gdoc])*
            #[allow(
                clippy::too_many_arguments,
                clippy::type_complexity,
                clippy::wrong_self_convention,
                clippy::should_implement_trait
            )]
            pub trait $group {
                $(
                    $(#[doc = $gmdoc])*
                    fn $gmethod(&self, $($garg: $gsafe),*) -> $crate::Result<$gret>;
                )*
            }
        )*
    };
}

/// The `extern "C"` entry point of one row: converts the arguments, calls the method
/// `<$callee>::$method` (of `Kernels`, a group's trait, or a kernel library's) on `$receiver`,
/// writes the results to their slots.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_entry {
    (
        ($($callee:tt)*) ($($receiver:tt)*) $k:literal $qualified:literal $symbol:ident
        $method:ident($($arg:ident: $safe:ty = $abi:ty),*) { $($value:ident => $slot:ident: $slot_ty:ty),* }
    ) => {
        #[doc = concat!(" Entry point of `", $qualified, "`, called by its C++ wrapper.")]
        ///
        /// # Safety
        /// Only the generated C++ wrapper calls this: it keeps every argument alive for the call
        /// and passes a valid slot for each result.
        // One result binds as `let (v) = ...`: the parentheses are the tuple case's.
        #[allow(unused_parens)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $symbol($($arg: $abi,)* $($slot: $slot_ty),*) -> *mut $crate::error::regen_error {
            // Decided at compile time: host-side ops skip the device layer's `run`; an in-place
            // kernel may be queued on a layer that queues kernels (device::launch).
            const ON_HOST: bool = $crate::device::host_ops::runs_on_host($qualified);
            const LAUNCH: bool = $crate::device::launch::launches($qualified, {
                let slots: &[&str] = &[$(stringify!($slot)),*];
                slots.len()
            });
            // The kernel, given its arguments and result slots.
            let kernel = |($($arg,)*): ($($abi,)*), ($($slot,)*): ($($slot_ty,)*)| -> $crate::Result<()> {
                let ($($value),*) = $($callee)*::$method(
                    $($receiver)*,
                    // SAFETY: the C++ wrapper keeps every argument alive for the call, or `Own`
                    // made it independent of the call.
                    $(unsafe { <$safe as $crate::args::FromAbi<'_>>::from_abi(&$arg) }?),*
                )?;
                // SAFETY: the C++ wrapper passes a valid slot for each result.
                $(unsafe { $crate::args::IntoSlot::write($value, $slot) }?;)*
                Ok(())
            };
            if LAUNCH && $crate::device::launch::queues_kernels() {
                let mut keep = $crate::device::launch::Keep::default();
                // SAFETY: the arguments are valid for this call; `own` copies what they point to.
                let args = unsafe { ($($crate::device::launch::Own::own($arg, &mut keep),)*) };
                if keep.complete() {
                    // SAFETY: owned above; a launched kernel has no result slots.
                    let args = unsafe { $crate::device::launch::Unsent::new((args, ($($slot,)*))) };
                    return $crate::ffi::launch($qualified, &CALLS[$k], keep, args, move |(a, s)| kernel(a, s));
                }
            }
            $crate::ffi::call($qualified, &CALLS[$k], ON_HOST, || kernel(($($arg,)*), ($($slot,)*)))
        }
    };
}

/// One method of the `Kernels` trait: required (`kernel`) or with a body raising
/// NotImplementedError that names the op (`stub`).
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_method {
    (kernel $key:literal $(#[doc = $doc:literal])* fn $method:ident($($arg:ident: $safe:ty),*) -> $ret:ty) => {
        $(#[doc = $doc])*
        fn $method(&self, $($arg: $safe),*) -> $crate::Result<$ret>;
    };
    (stub $key:literal $(#[doc = $doc:literal])* fn $method:ident($($arg:ident: $safe:ty),*) -> $ret:ty) => {
        $(#[doc = $doc])*
        fn $method(&self, $($arg: $safe),*) -> $crate::Result<$ret> {
            Err($crate::Error::not_implemented(concat!(
                "no kernel in this backend (list `",
                $key,
                "` under `implement` in regen.toml)"
            )))
        }
    };
}
