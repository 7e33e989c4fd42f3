(function_item name: (identifier) @definition.function)
(function_signature_item name: (identifier) @definition.function)
(struct_item name: (type_identifier) @definition.class)
(enum_item name: (type_identifier) @definition.enum)
(trait_item name: (type_identifier) @definition.interface)
(type_item name: (type_identifier) @definition.type)
(union_item name: (type_identifier) @definition.class)
(mod_item name: (identifier) @definition.module)
(macro_definition name: (identifier) @definition.macro)
(const_item name: (identifier) @definition.constant)
(static_item name: (identifier) @definition.constant)

(use_declaration argument: (_) @import)
(mod_item name: (identifier) @import.module !body)

(identifier) @reference
(type_identifier) @reference
(field_identifier) @reference

(line_comment) @doc
(block_comment) @doc
(string_literal) @doc
(raw_string_literal) @doc
