; With ecmascript.scm.
(class_declaration name: (identifier) @definition.class)
