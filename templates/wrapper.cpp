{#- The C++ side of an op's calling convention (abi.rs), shared by register.cpp and
    register_custom.cpp: the Rust entry point's declaration, and the wrapper that lifts each
    argument to its C form, passes a slot per crossing result and rebuilds the C++ result. -#}

{%- macro declaration(w) -%}
regen_error* {{ w.symbol }}(
{%- for a in w.args %}{{ a.c_type }} {{ a.param }}{% if !loop.last || w.has_slots() %}, {% endif %}{% endfor -%}
{%- for r in w.slots() %}{{ r.spelling.c_slot }} regen_r{{ r.index }}{% if !loop.last %}, {% endif %}{% endfor -%}
{%- if w.takes_nothing() %}void{% endif %});
{%- endmacro -%}

{%- macro definition(w) -%}
// {{ w.schema }}
{{ w.return_type }} {{ w.name }}({% for a in w.args %}{{ a.cpp_type }} {{ a.param }}{% if !loop.last %}, {% endif %}{% endfor %}) {
{%- if !w.device_candidates.is_empty() %}
  const c10::OptionalDeviceGuard regen_device_guard(::regen::call_device({{ w.device_candidates|join(", ") }}));
{%- endif %}
{%- for a in w.args %}
  auto regen_a{{ loop.index0 }} = ::regen::{{ a.lift }}({{ a.param }}, "{{ w.qualified }} argument '{{ a.name }}'");
{%- endfor %}
{%- for r in w.slots() %}
  {{ r.spelling.cpp_local }} regen_r{{ r.index }}{% if let Some(init) = r.spelling.cpp_init %} = {{ init }}{% endif %};
{%- endfor %}
  ::regen::check({{ w.symbol }}(
{%- for a in w.args %}regen_a{{ loop.index0 }}{% if !loop.last || w.has_slots() %}, {% endif %}{% endfor -%}
{%- for r in w.slots() -%}
{%- if let Some(sink) = r.spelling.cpp_sink %}{{ sink }}(regen_r{{ r.index }}){% else %}&regen_r{{ r.index }}{% endif -%}
{%- if !loop.last %}, {% endif %}{% endfor %}));
{%- if w.returns_tuple %}
  return {{ w.return_type }}(
{%- for r in w.returns -%}
{%- match r -%}
{%- when WrapperReturn::Alias(param) -%}{{ param }}
{%- when WrapperReturn::Slot(slot) -%}
{%- if let Some(f) = slot.spelling.cpp_rebuild %}{{ f }}(regen_r{{ slot.index }})
{%- else if slot.spelling.cpp_sink.is_some() %}::std::move(regen_r{{ slot.index }})
{%- else %}regen_r{{ slot.index }}{% endif -%}
{%- endmatch -%}
{%- if !loop.last %}, {% endif %}{% endfor %});
{%- else %}
{%- for r in w.returns %}
  return {% match r -%}
{%- when WrapperReturn::Alias(param) -%}{{ param }}
{%- when WrapperReturn::Slot(slot) -%}
{%- if let Some(f) = slot.spelling.cpp_rebuild %}{{ f }}(regen_r{{ slot.index }}){% else %}regen_r{{ slot.index }}{% endif -%}
{%- endmatch %};
{%- endfor %}
{%- endif %}
}
{%- endmacro -%}


{%- macro in_place_definition(w) -%}
// {{ w.schema }}
// Runs {{ w.out_qualified }} with out = self.
{{ w.return_type }} {{ w.name }}({% for a in w.args %}{{ a.cpp_type }} {{ a.param }}{% if !loop.last %}, {% endif %}{% endfor %}) {
{%- if !w.device_candidates.is_empty() %}
  const c10::OptionalDeviceGuard regen_device_guard(::regen::call_device({{ w.device_candidates|join(", ") }}));
{%- endif %}
  const ::regen::InPlace regen_in_place({{ w.args[0].param }});
{%- for a in w.args %}
  auto regen_a{{ loop.index0 }} = ::regen::{{ a.lift }}({{ a.param }}, "{{ w.qualified }} argument '{{ a.name }}'");
{%- endfor %}
  ::regen::check({{ w.symbol }}({% for i in w.call %}regen_a{{ i }}{% if !loop.last %}, {% endif %}{% endfor %}));
  return {{ w.args[0].param }};
}
{%- endmacro -%}
