; Definitions: @name is the defined name, @definition.<kind> the whole definition, @body what the signature stops before.
(class_declaration name: (identifier) @name body: (_) @body) @definition.class
(interface_declaration name: (identifier) @name body: (_) @body) @definition.interface
(enum_declaration name: (identifier) @name body: (_) @body) @definition.enum
(record_declaration name: (identifier) @name body: (_) @body) @definition.class
(annotation_type_declaration name: (identifier) @name body: (_) @body) @definition.interface
(method_declaration name: (identifier) @name body: (_) @body) @definition.method
(method_declaration name: (identifier) @name !body) @definition.method
(constructor_declaration name: (identifier) @name body: (_) @body) @definition.method
