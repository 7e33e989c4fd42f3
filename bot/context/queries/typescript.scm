; With ecmascript.scm.
(function_signature name: (identifier) @definition.function)
(class_declaration name: (type_identifier) @definition.class)
(abstract_class_declaration name: (type_identifier) @definition.class)
(interface_declaration name: (type_identifier) @definition.interface)
(type_alias_declaration name: (type_identifier) @definition.type)
(enum_declaration name: (identifier) @definition.enum)
(method_signature name: (property_identifier) @definition.method)

(type_identifier) @reference
