//! Emits `kernels.rs`: the backend's kernel trait, its installation, call counters, and the
//! `extern "C"` entry points the C++ wrappers call. Built with proc-macro2/quote and formatted
//! in-process with prettyplease, so the output is ordinary rustfmt-style code.
//!
//! Only ops with a C++ wrapper (registered, or registered for autograd) get a trait method and an
//! entry point: a method nothing can call would only cost the backend crate compile time. The file
//! has no inner attributes, so it can be mounted with `#[path]` or pulled in with `include!`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use crate::abi::RetKind;
use crate::config::Config;
use crate::rust_name::{kernel_symbol, rust_bindings};
use crate::select::{Selected, Selection};

fn tokens(s: &str) -> TokenStream {
    s.parse().expect("type strings in the ABI tables are valid Rust")
}

/// The Rust bindings of an op's arguments (`rust_name::rust_bindings`).
fn bindings(s: &Selected<'_>) -> Vec<Ident> {
    rust_bindings(s.abi.args.iter().map(|a| a.name.as_str())).iter().map(|n| Ident::new(n, Span::call_site())).collect()
}

/// The kernel's result type: the crossing results, as one value or a tuple.
fn result_type(s: &Selected<'_>) -> TokenStream {
    let types: Vec<TokenStream> = s.abi.returns.iter().filter_map(|r| r.kind.rust_safe_type()).map(tokens).collect();
    match types.len() {
        1 => types.into_iter().next().expect("one type"),
        _ => quote! { (#(#types),*) },
    }
}

fn trait_method(s: &Selected<'_>) -> TokenStream {
    let op = s.op;
    let method = Ident::new(&op.rust_name, Span::call_site());
    let doc = format!(" `{}`", op.schema_text);
    let params = s.abi.args.iter().zip(bindings(s)).map(|(a, name)| {
        let ty = tokens(a.kind.rust_safe());
        quote! { #name: #ty }
    });
    let result = result_type(s);
    if s.implemented {
        quote! {
            #[doc = #doc]
            fn #method(&self, #(#params),*) -> Result<#result>;
        }
    } else {
        let message = format!("no kernel in this backend (list `{}` under `implement` in regen.toml)", op.key);
        quote! {
            #[doc = #doc]
            fn #method(&self, #(#params),*) -> Result<#result> {
                Err(Error::not_implemented(#message))
            }
        }
    }
}

fn entry_point(k: usize, s: &Selected<'_>, config: &Config) -> TokenStream {
    let op = s.op;
    let symbol = Ident::new(&kernel_symbol(&config.symbol_prefix, &op.rust_name), Span::call_site());
    let method = Ident::new(&op.rust_name, Span::call_site());
    let qualified = op.qualified();
    let doc = format!(" Entry point of `{qualified}`, called by its C++ wrapper.");
    let names = bindings(s);
    let abi_types = s.abi.args.iter().map(|a| tokens(a.kind.rust_abi()));
    let safe_types: Vec<TokenStream> = s.abi.args.iter().map(|a| tokens(a.kind.rust_safe())).collect();
    let slots: Vec<(Ident, TokenStream)> = s
        .abi
        .returns
        .iter()
        .enumerate()
        .filter_map(|(k, r)| r.kind.rust_slot_type().map(|t| (format_ident!("regen_r{k}"), tokens(t))))
        .collect();
    let slot_params = slots.iter().map(|(n, t)| quote! { #n: #t });
    let slot_names: Vec<&Ident> = slots.iter().map(|(n, _)| n).collect();
    let values: Vec<Ident> = (0..slots.len()).map(|k| format_ident!("regen_v{k}")).collect();
    let call = quote! {
        kernels()?.#method(#(unsafe { <#safe_types as FromAbi<'_>>::from_abi(&#names) }?),*)
    };
    let body = match values.len() {
        0 => quote! { #call?; },
        1 => quote! {
            let regen_v0 = #call?;
            unsafe { IntoSlot::write(regen_v0, #(#slot_names)*) }?;
        },
        _ => quote! {
            let (#(#values),*) = #call?;
            #(
                unsafe { IntoSlot::write(#values, #slot_names) }?;
            )*
        },
    };
    quote! {
        #[doc = #doc]
        ///
        /// # Safety
        /// Only the generated C++ wrapper calls this: it keeps every argument alive for the call
        /// and passes a valid slot for each result.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn #symbol(#(#names: #abi_types,)* #(#slot_params),*) -> *mut abi::regen_error {
            regen_runtime::ffi::call(#qualified, &CALLS[#k], || {
                #body
                Ok(())
            })
        }
    }
}

fn format(file: TokenStream) -> String {
    let syntax: syn::File = syn::parse2(file).expect("the generated tokens form a Rust file");
    prettyplease::unparse(&syntax)
}

/// The whole `kernels.rs` text, starting with its `@generated` line.
pub fn emit_rust(selection: &Selection<'_>, config: &Config, note: &str) -> String {
    // Formatting dominates generation time and the entry points are independent items, so
    // they are formatted in two parts on two cores; the trait goes with the smaller part.
    // (Token streams are not Send: each thread builds its own.)
    let wrapped: Vec<&Selected<'_>> = selection.entry_points().collect();
    let entries = |first: usize, part: &[&Selected<'_>]| {
        let items = part.iter().enumerate().map(|(k, s)| entry_point(first + k, s, config));
        format(quote! { #(#items)* })
    };
    let split = wrapped.len() * 2 / 5;
    let (first, second) = wrapped.split_at(split);
    let (head, first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| entries(split, second));
        (emit_head(&wrapped), entries(0, first), second.join().expect("formatting does not panic"))
    });
    // prettyplease puts no blank line between items, so the parts join as one file would.
    format!("// {note}\n\n{head}{first}{second}")
}

/// Everything before the entry points: imports, the trait, its installation, the call counters.
fn emit_head(wrapped: &[&Selected<'_>]) -> String {
    let methods = wrapped.iter().map(|s| trait_method(s));
    let uses_returns = wrapped.iter().any(|s| s.abi.returns.iter().any(|r| !matches!(r.kind, RetKind::TensorRef(_))));
    let into_slot = uses_returns.then(|| quote! { use regen_runtime::args::IntoSlot; });
    let count = proc_macro2::Literal::usize_unsuffixed(wrapped.len());
    let keys = wrapped.iter().map(|s| s.op.key.as_str());
    format(quote! {
        use std::sync::OnceLock;
        use std::sync::atomic::{AtomicU64, Ordering};

        // Kernel signatures use only some of these types.
        #[allow(unused_imports)]
        use regen_runtime::{
            Device, Error, Generator, Layout, MemoryFormat, OptionalTensorList, QScheme, Result, Scalar, ScalarType,
            Storage, Stream, Tensor, TensorList, TensorRef, abi, args::FromAbi,
        };
        #into_slot

        /// The backend's kernels, one method per registered op, documented with its schema.
        /// Methods with a default body are not implemented yet: they raise NotImplementedError.
        // Method names are PyTorch's op names (`from_file`, `to_mkldnn`), not Rust conventions.
        #[allow(unused_variables, clippy::too_many_arguments, clippy::type_complexity, clippy::wrong_self_convention, clippy::should_implement_trait)]
        pub trait Kernels: Send + Sync + 'static {
            #(#methods)*
        }

        static KERNELS: OnceLock<Box<dyn Kernels>> = OnceLock::new();

        /// The ops with a Rust entry point here (`name.overload`), in the order of their counters.
        pub const OPS: [&str; #count] = [#(#keys),*];

        /// How many times each entry point was called.
        static CALLS: [AtomicU64; #count] = [const { AtomicU64::new(0) }; #count];

        /// Installs the backend's kernels and its call counters; the first installation wins
        /// (returns false after).
        pub fn install(kernels: impl Kernels) -> bool {
            regen_runtime::ffi::set_native_calls(native_calls);
            KERNELS.set(Box::new(kernels)).is_ok()
        }

        /// How many times the Rust kernel of `op` (`name.overload`) was called; `None` when `op`
        /// has no entry point in this backend.
        pub fn native_calls(op: &str) -> Option<u64> {
            OPS.iter().position(|o| *o == op).map(|k| CALLS[k].load(Ordering::Relaxed))
        }

        fn kernels() -> Result<&'static dyn Kernels> {
            KERNELS.get().map(|k| &**k).ok_or_else(|| Error::runtime("no kernels installed: call install() at load time"))
        }
    })
}
