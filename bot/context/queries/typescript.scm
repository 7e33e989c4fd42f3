(function_declaration name: (identifier) @definition.function)
(generator_function_declaration name: (identifier) @definition.function)
(function_signature name: (identifier) @definition.function)
(class_declaration name: (type_identifier) @definition.class)
(abstract_class_declaration name: (type_identifier) @definition.class)
(interface_declaration name: (type_identifier) @definition.interface)
(type_alias_declaration name: (type_identifier) @definition.type)
(enum_declaration name: (identifier) @definition.enum)
(method_definition name: (property_identifier) @definition.method)
(method_signature name: (property_identifier) @definition.method)
(variable_declarator name: (identifier) @definition.function value: [(arrow_function) (function_expression)])

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
((call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import)))
  (#eq? @_require "require"))

(identifier) @reference
(property_identifier) @reference
(type_identifier) @reference
(shorthand_property_identifier) @reference

(comment) @doc
