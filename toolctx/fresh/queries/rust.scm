; Definitions: @name is the defined name, @definition.<kind> the whole definition, @body what the signature stops before.
(struct_item name: (type_identifier) @name) @definition.class
(enum_item name: (type_identifier) @name body: (_) @body) @definition.enum
(union_item name: (type_identifier) @name body: (_) @body) @definition.class
(trait_item name: (type_identifier) @name body: (_) @body) @definition.interface
(type_item name: (type_identifier) @name) @definition.type
(function_item name: (identifier) @name body: (_) @body) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(mod_item name: (identifier) @name body: (_) @body) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(impl_item type: (_) @name body: (_) @body) @definition.impl
