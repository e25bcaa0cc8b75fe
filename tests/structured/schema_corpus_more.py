"""Forty more JSON schemas of the kinds APIs and agents send, each written as
its tool emits it (not tuned to our converter):

- pydantic v2 (2.13) model_json_schema() outputs, generated from the models
  named in the comments: $defs, a title everywhere, Optional[X] = None as
  anyOf [X, null] with default null, Literal as const/enum, discriminated
  unions as oneOf + discriminator, datetime/date/UUID/IPv4Address/HttpUrl/
  Decimal/timedelta/set as pydantic writes them;
- zod-to-json-schema outputs (draft-07 $schema last, additionalProperties
  false, unions as anyOf, z.lazy recursion as $ref "#");
- OpenAI structured-outputs examples (strict: every property required,
  additionalProperties false, nullable as a type list);
- OpenAPI 3.1 / 3.0 component schemas;
- SchemaStore subsets (.eslintrc, compose service, GitHub Actions job,
  package.json);
- agent schemas (ReAct step, plan DAG, entity spans, JSON-RPC, GeoJSON,
  money, semver, recursive filters, time-slot tuples).

SCHEMAS_MORE: name -> schema.  REFUSED_MORE: name -> a word the 400 of a
schema the converter refuses up front must contain.  Each schema's smallest
instance is short (checked when they were written)."""

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
DRAFT7 = "http://json-schema.org/draft-07/schema#"

# semver.org's suggested regular expression.
SEMVER = (r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
          r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")

SCHEMAS_MORE = {
    # ---- pydantic v2 model_json_schema() ----
    # class Cat(BaseModel): pet_type: Literal['cat']; meows: int
    # class Dog(BaseModel): pet_type: Literal['dog']; barks: float
    # class Lizard(BaseModel): pet_type: Literal['reptile', 'lizard']; scales: bool
    # class Model(BaseModel): pet: Union[Cat, Dog, Lizard] = Field(discriminator='pet_type'); n: int
    "pyd_pet_discriminated": {
        "$defs": {
            "Cat": {
                "properties": {
                    "pet_type": {"const": "cat", "title": "Pet Type", "type": "string"},
                    "meows": {"title": "Meows", "type": "integer"},
                },
                "required": ["pet_type", "meows"], "title": "Cat", "type": "object",
            },
            "Dog": {
                "properties": {
                    "pet_type": {"const": "dog", "title": "Pet Type", "type": "string"},
                    "barks": {"title": "Barks", "type": "number"},
                },
                "required": ["pet_type", "barks"], "title": "Dog", "type": "object",
            },
            "Lizard": {
                "properties": {
                    "pet_type": {"enum": ["reptile", "lizard"], "title": "Pet Type", "type": "string"},
                    "scales": {"title": "Scales", "type": "boolean"},
                },
                "required": ["pet_type", "scales"], "title": "Lizard", "type": "object",
            },
        },
        "properties": {
            "pet": {
                "discriminator": {
                    "mapping": {
                        "cat": "#/$defs/Cat", "dog": "#/$defs/Dog", "lizard": "#/$defs/Lizard",
                        "reptile": "#/$defs/Lizard",
                    },
                    "propertyName": "pet_type",
                },
                "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}, {"$ref": "#/$defs/Lizard"}],
                "title": "Pet",
            },
            "n": {"title": "N", "type": "integer"},
        },
        "required": ["pet", "n"], "title": "Model", "type": "object",
    },
    # class Comment(BaseModel): id: int; author: str; text: str = Field(max_length=280)
    #     created_at: datetime; replies: list['Comment'] = []
    "pyd_comment_thread": {
        "$defs": {
            "Comment": {
                "properties": {
                    "id": {"title": "Id", "type": "integer"}, "author": {"title": "Author", "type": "string"},
                    "text": {"maxLength": 280, "title": "Text", "type": "string"},
                    "created_at": {"format": "date-time", "title": "Created At", "type": "string"},
                    "replies": {
                        "default": [], "items": {"$ref": "#/$defs/Comment"}, "title": "Replies", "type": "array",
                    },
                },
                "required": ["id", "author", "text", "created_at"], "title": "Comment", "type": "object",
            },
        },
        "$ref": "#/$defs/Comment",
    },
    # class Priority(str, Enum): low, normal, high
    # class Address(BaseModel): street: str; city: str
    #     country: str = Field(pattern=r'^[A-Z]{2}$', description='ISO 3166-1 alpha-2 code')
    # class Event(BaseModel): id: UUID; name: str = Field(min_length=1, max_length=50); starts_at: datetime
    #     ends_at: Optional[datetime] = None; registration_deadline: date; priority: Priority = Priority.normal
    #     organizer_ip: IPv4Address; venue: Optional[Address] = None
    "pyd_event": {
        "$defs": {
            "Address": {
                "properties": {
                    "street": {"title": "Street", "type": "string"}, "city": {"title": "City", "type": "string"},
                    "country": {
                        "description": "ISO 3166-1 alpha-2 code", "pattern": "^[A-Z]{2}$", "title": "Country",
                        "type": "string",
                    },
                },
                "required": ["street", "city", "country"], "title": "Address", "type": "object",
            },
            "Priority": {"enum": ["low", "normal", "high"], "title": "Priority", "type": "string"},
        },
        "properties": {
            "id": {"format": "uuid", "title": "Id", "type": "string"},
            "name": {"maxLength": 50, "minLength": 1, "title": "Name", "type": "string"},
            "starts_at": {"format": "date-time", "title": "Starts At", "type": "string"},
            "ends_at": {
                "anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}], "default": None,
                "title": "Ends At",
            },
            "registration_deadline": {"format": "date", "title": "Registration Deadline", "type": "string"},
            "priority": {"$ref": "#/$defs/Priority", "default": "normal"},
            "organizer_ip": {"format": "ipv4", "title": "Organizer Ip", "type": "string"},
            "venue": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        },
        "required": ["id", "name", "starts_at", "registration_deadline", "organizer_ip"], "title": "Event",
        "type": "object",
    },
    # class Item(BaseModel): sku: str = Field(pattern=r'^[A-Z]{3}-\d{3}$'); name: str
    #     qty: int = Field(ge=0, le=1000); price: float = Field(gt=0)
    # class Inventory(BaseModel): warehouse: str; items: list[Item] = Field(max_length=5)
    #     counts_by_bin: dict[str, int]; location: tuple[float, float]
    "pyd_inventory": {
        "$defs": {
            "Item": {
                "properties": {
                    "sku": {"pattern": "^[A-Z]{3}-\\d{3}$", "title": "Sku", "type": "string"},
                    "name": {"title": "Name", "type": "string"},
                    "qty": {"maximum": 1000, "minimum": 0, "title": "Qty", "type": "integer"},
                    "price": {"exclusiveMinimum": 0, "title": "Price", "type": "number"},
                },
                "required": ["sku", "name", "qty", "price"], "title": "Item", "type": "object",
            },
        },
        "properties": {
            "warehouse": {"title": "Warehouse", "type": "string"},
            "items": {"items": {"$ref": "#/$defs/Item"}, "maxItems": 5, "title": "Items", "type": "array"},
            "counts_by_bin": {
                "additionalProperties": {"type": "integer"}, "title": "Counts By Bin", "type": "object",
            },
            "location": {
                "maxItems": 2, "minItems": 2, "prefixItems": [{"type": "number"}, {"type": "number"}],
                "title": "Location", "type": "array",
            },
        },
        "required": ["warehouse", "items", "counts_by_bin", "location"], "title": "Inventory", "type": "object",
    },
    # class Product(BaseModel): id: int; name: str; tags: list[str] = []
    # class Page(BaseModel, Generic[T]): items: list[T]; total: int = Field(ge=0); page: int = Field(ge=1)
    #     size: int = Field(ge=1, le=100); next_cursor: Optional[str] = None
    # Page[Product]
    "pyd_page_generic": {
        "$defs": {
            "Product": {
                "properties": {
                    "id": {"title": "Id", "type": "integer"}, "name": {"title": "Name", "type": "string"},
                    "tags": {"default": [], "items": {"type": "string"}, "title": "Tags", "type": "array"},
                },
                "required": ["id", "name"], "title": "Product", "type": "object",
            },
        },
        "properties": {
            "items": {"items": {"$ref": "#/$defs/Product"}, "title": "Items", "type": "array"},
            "total": {"minimum": 0, "title": "Total", "type": "integer"},
            "page": {"minimum": 1, "title": "Page", "type": "integer"},
            "size": {"maximum": 100, "minimum": 1, "title": "Size", "type": "integer"},
            "next_cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Next Cursor"},
        },
        "required": ["items", "total", "page", "size"], "title": "Page[Product]", "type": "object",
    },
    # instructor-style classification:
    # class Label(str, Enum): billing, technical, account, other
    # class TicketTriage(BaseModel): """Classify a customer support ticket."""
    #     labels: list[Label] = Field(min_length=1, max_length=3)
    #     confidence: float = Field(ge=0, le=1, description=...); urgent: bool; reasoning: str = Field(description=...)
    "pyd_ticket_triage": {
        "$defs": {
            "Label": {"enum": ["billing", "technical", "account", "other"], "title": "Label", "type": "string"},
        },
        "description": "Classify a customer support ticket.",
        "properties": {
            "labels": {
                "items": {"$ref": "#/$defs/Label"}, "maxItems": 3, "minItems": 1, "title": "Labels", "type": "array",
            },
            "confidence": {
                "description": "How sure the classification is", "maximum": 1, "minimum": 0, "title": "Confidence",
                "type": "number",
            },
            "urgent": {"title": "Urgent", "type": "boolean"},
            "reasoning": {"description": "One sentence of justification", "title": "Reasoning", "type": "string"},
        },
        "required": ["labels", "confidence", "urgent", "reasoning"], "title": "TicketTriage", "type": "object",
    },
    # class Num(BaseModel): kind: Literal['num']; value: float
    # class BinOp(BaseModel): kind: Literal['binop']; op: Literal['+', '-', '*', '/']; left: 'Expr'; right: 'Expr'
    # Expr = Union[Num, BinOp]
    # class Calculation(BaseModel): expression: Expr; result: Optional[float] = None
    "pyd_expression_tree": {
        "$defs": {
            "BinOp": {
                "properties": {
                    "kind": {"const": "binop", "title": "Kind", "type": "string"},
                    "op": {"enum": ["+", "-", "*", "/"], "title": "Op", "type": "string"},
                    "left": {"anyOf": [{"$ref": "#/$defs/Num"}, {"$ref": "#/$defs/BinOp"}], "title": "Left"},
                    "right": {"anyOf": [{"$ref": "#/$defs/Num"}, {"$ref": "#/$defs/BinOp"}], "title": "Right"},
                },
                "required": ["kind", "op", "left", "right"], "title": "BinOp", "type": "object",
            },
            "Num": {
                "properties": {
                    "kind": {"const": "num", "title": "Kind", "type": "string"},
                    "value": {"title": "Value", "type": "number"},
                },
                "required": ["kind", "value"], "title": "Num", "type": "object",
            },
        },
        "properties": {
            "expression": {"anyOf": [{"$ref": "#/$defs/Num"}, {"$ref": "#/$defs/BinOp"}], "title": "Expression"},
            "result": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None, "title": "Result"},
        },
        "required": ["expression"], "title": "Calculation", "type": "object",
    },
    # class Profile(BaseModel): username: str = Field(pattern=r'^[a-z0-9_]{3,16}$'); homepage: HttpUrl
    #     avatar: Optional[HttpUrl] = None; bio: str = Field(default='', max_length=160)
    "pyd_profile_httpurl": {
        "properties": {
            "username": {"pattern": "^[a-z0-9_]{3,16}$", "title": "Username", "type": "string"},
            "homepage": {"format": "uri", "maxLength": 2083, "minLength": 1, "title": "Homepage", "type": "string"},
            "avatar": {
                "anyOf": [{"format": "uri", "maxLength": 2083, "minLength": 1, "type": "string"}, {"type": "null"}],
                "default": None, "title": "Avatar",
            },
            "bio": {"default": "", "maxLength": 160, "title": "Bio", "type": "string"},
        },
        "required": ["username", "homepage"], "title": "Profile", "type": "object",
    },
    # class Line(BaseModel): description: str; amount: Decimal
    # class Invoice(BaseModel): number: str; issued: date; lines: list[Line]; total: Decimal
    "pyd_invoice_decimal": {
        "$defs": {
            "Line": {
                "properties": {
                    "description": {"title": "Description", "type": "string"},
                    "amount": {
                        "anyOf": [
                            {"type": "number"},
                            {"pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$", "type": "string"},
                        ],
                        "title": "Amount",
                    },
                },
                "required": ["description", "amount"], "title": "Line", "type": "object",
            },
        },
        "properties": {
            "number": {"title": "Number", "type": "string"},
            "issued": {"format": "date", "title": "Issued", "type": "string"},
            "lines": {"items": {"$ref": "#/$defs/Line"}, "title": "Lines", "type": "array"},
            "total": {
                "anyOf": [{"type": "number"}, {"pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$", "type": "string"}],
                "title": "Total",
            },
        },
        "required": ["number", "issued", "lines", "total"], "title": "Invoice", "type": "object",
    },
    # class Job(BaseModel): name: str; command: list[str]; timeout: timedelta = timedelta(minutes=5)
    #     retries: int = Field(default=0, ge=0, le=5)
    "pyd_job_timeout": {
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "command": {"items": {"type": "string"}, "title": "Command", "type": "array"},
            "timeout": {"default": "PT5M", "format": "duration", "title": "Timeout", "type": "string"},
            "retries": {"default": 0, "maximum": 5, "minimum": 0, "title": "Retries", "type": "integer"},
        },
        "required": ["name", "command"], "title": "Job", "type": "object",
    },
    # class Article(BaseModel): title: str; tags: set[str]; published: bool = False
    "pyd_article_tags_set": {
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array", "uniqueItems": True},
            "published": {"default": False, "title": "Published", "type": "boolean"},
        },
        "required": ["title", "tags"], "title": "Article", "type": "object",
    },

    # ---- zod-to-json-schema ----
    # z.object({email: z.string().email(), password: z.string().min(8).max(64),
    #   displayName: z.string().min(1).max(32), age: z.number().int().positive().optional(),
    #   newsletter: z.boolean().default(false), acceptTerms: z.literal(true)})
    "zod_signup_form": {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email"},
                       "password": {"type": "string", "minLength": 8, "maxLength": 64},
                       "displayName": {"type": "string", "minLength": 1, "maxLength": 32},
                       "age": {"type": "integer", "exclusiveMinimum": 0},
                       "newsletter": {"type": "boolean", "default": False},
                       "acceptTerms": {"type": "boolean", "const": True}},
        "required": ["email", "password", "displayName", "acceptTerms"],
        "additionalProperties": False, "$schema": DRAFT7},
    # z.object({recipient: z.string().uuid(), notification: z.discriminatedUnion("channel", [
    #   z.object({channel: z.literal("email"), address: z.string().email(), subject: z.string().max(78)}),
    #   z.object({channel: z.literal("sms"), phone: z.string().regex(/^\+[1-9]\d{7,14}$/)}),
    #   z.object({channel: z.literal("webhook"), url: z.string().url(), secret: z.string().optional()})]),
    #   sendAt: z.string().datetime().optional()})
    "zod_notification_union": {
        "type": "object",
        "properties": {
            "recipient": {"type": "string", "format": "uuid"},
            "notification": {"anyOf": [
                {"type": "object", "properties": {"channel": {"type": "string", "const": "email"},
                                                  "address": {"type": "string", "format": "email"},
                                                  "subject": {"type": "string", "maxLength": 78}},
                 "required": ["channel", "address", "subject"], "additionalProperties": False},
                {"type": "object", "properties": {"channel": {"type": "string", "const": "sms"},
                                                  "phone": {"type": "string", "pattern": "^\\+[1-9]\\d{7,14}$"}},
                 "required": ["channel", "phone"], "additionalProperties": False},
                {"type": "object", "properties": {"channel": {"type": "string", "const": "webhook"},
                                                  "url": {"type": "string", "format": "uri"},
                                                  "secret": {"type": "string"}},
                 "required": ["channel", "url"], "additionalProperties": False}]},
            "sendAt": {"type": "string", "format": "date-time"}},
        "required": ["recipient", "notification"], "additionalProperties": False, "$schema": DRAFT7},
    # const Category = z.lazy(() => z.object({name: z.string(), slug: z.string().regex(/^[a-z0-9-]+$/),
    #   subcategories: z.array(Category)}))
    "zod_category_tree": {
        "type": "object",
        "properties": {"name": {"type": "string"},
                       "slug": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                       "subcategories": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name", "slug", "subcategories"], "additionalProperties": False, "$schema": DRAFT7},
    # z.object({hostname: z.string(), address: z.string().ip(), port: z.number().int().min(1).max(65535),
    #   tls: z.boolean().default(true)})  -- .ip() without a version is ipv4 or ipv6
    "zod_server_ip": {
        "type": "object",
        "properties": {"hostname": {"type": "string"},
                       "address": {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
                       "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                       "tls": {"type": "boolean", "default": True}},
        "required": ["hostname", "address", "port"], "additionalProperties": False, "$schema": DRAFT7},

    # ---- OpenAI structured outputs (strict) ----
    "openai_ui_component": {
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "The type of the UI component",
                     "enum": ["div", "button", "header", "section", "field", "form"]},
            "label": {"type": "string",
                      "description": "The label of the UI component, used for buttons or form fields"},
            "children": {"type": "array", "description": "Nested UI components", "items": {"$ref": "#"}},
            "attributes": {"type": "array",
                           "description": "Arbitrary attributes for the UI component, suitable for any element",
                           "items": {"type": "object",
                                     "properties": {"name": {"type": "string", "description": "The name of the "
                                                             "attribute, for example onClick or className"},
                                                    "value": {"type": "string",
                                                              "description": "The value of the attribute"}},
                                     "required": ["name", "value"], "additionalProperties": False}}},
        "required": ["type", "label", "children", "attributes"], "additionalProperties": False},
    "openai_math_reasoning": {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {
            "type": "object", "properties": {"explanation": {"type": "string"}, "output": {"type": "string"}},
            "required": ["explanation", "output"], "additionalProperties": False}},
            "final_answer": {"type": "string"}},
        "required": ["steps", "final_answer"], "additionalProperties": False},
    "openai_moderation": {
        "type": "object",
        "properties": {
            "is_violating": {"type": "boolean", "description": "Indicates if the content is violating guidelines"},
            "category": {"type": ["string", "null"],
                         "description": "Type of violation, if the content is violating guidelines. Null otherwise.",
                         "enum": ["violence", "sexual", "self_harm", None]},
            "explanation_if_violating": {"type": ["string", "null"],
                                         "description": "Explanation of why the content is violating"}},
        "required": ["is_violating", "category", "explanation_if_violating"], "additionalProperties": False},
    "openai_insert_anyof": {
        "type": "object",
        "properties": {"item": {"anyOf": [
            {"type": "object", "description": "The user object to insert into the database",
             "properties": {"name": {"type": "string", "description": "The name of the user"},
                            "age": {"type": "number", "description": "The age of the user"}},
             "required": ["name", "age"], "additionalProperties": False},
            {"type": "object", "description": "The address object to insert into the database",
             "properties": {"number": {"type": "string", "description":
                                       "The number of the address. Eg. for 123 main st, this would be 123"},
                            "street": {"type": "string", "description":
                                       "The street name. Eg. for 123 main st, this would be main st"},
                            "city": {"type": "string", "description": "The city of the address"}},
             "required": ["number", "street", "city"], "additionalProperties": False}]}},
        "required": ["item"], "additionalProperties": False},

    # ---- OpenAPI component schemas ----
    # petstore3's Order (OpenAPI 3.0/3.1: int64/int32 formats, example, xml are annotations).
    "openapi_order": {
        "type": "object",
        "properties": {"id": {"type": "integer", "format": "int64", "example": 10},
                       "petId": {"type": "integer", "format": "int64", "example": 198772},
                       "quantity": {"type": "integer", "format": "int32", "example": 7},
                       "shipDate": {"type": "string", "format": "date-time"},
                       "status": {"type": "string", "description": "Order Status", "example": "approved",
                                  "enum": ["placed", "approved", "delivered"]},
                       "complete": {"type": "boolean"}},
        "xml": {"name": "order"}},
    # RFC 9457 problem details, as API guidelines publish it for error responses.
    "openapi_problem_error": {
        "type": "object",
        "properties": {"type": {"type": "string", "format": "uri", "default": "about:blank",
                                "description": "A URI reference that identifies the problem type"},
                       "title": {"type": "string", "example": "Service Unavailable"},
                       "status": {"type": "integer", "format": "int32", "minimum": 100, "exclusiveMaximum": 600,
                                  "example": 503},
                       "detail": {"type": "string"},
                       "instance": {"type": "string", "format": "uri"}},
        "required": ["title", "status"]},
    # A cursor-paginated list of petstore-expanded's Pet (allOf NewPet + id), OpenAPI 3.1.
    "openapi_pet_page": {
        "type": "object", "required": ["data", "has_more"],
        "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
                       "has_more": {"type": "boolean"},
                       "next_cursor": {"type": ["string", "null"]}},
        "components": {"schemas": {
            "Pet": {"allOf": [{"$ref": "#/components/schemas/NewPet"},
                              {"type": "object", "required": ["id"],
                               "properties": {"id": {"type": "integer", "format": "int64"}}}]},
            "NewPet": {"type": "object", "required": ["name"],
                       "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}}}}},
    # OpenAPI 3.0 style: nullable / readOnly / example are annotations to a 2020-12 validator.
    "openapi30_user": {
        "type": "object", "required": ["id", "username", "email"],
        "properties": {"id": {"type": "integer", "format": "int64", "readOnly": True, "example": 42},
                       "username": {"type": "string", "example": "theUser"},
                       "email": {"type": "string", "format": "email", "example": "john@email.com"},
                       "phone": {"type": "string", "nullable": True, "example": "12345"},
                       "userStatus": {"type": "integer", "format": "int32", "description": "User Status",
                                      "example": 1},
                       "createdAt": {"type": "string", "format": "date-time", "readOnly": True}}},
    # A PATCH body: any subset of the fields, but at least one.
    "patch_user_min_properties": {
        "type": "object", "description": "Fields to update; at least one must be given.",
        "properties": {"display_name": {"type": "string", "minLength": 1, "maxLength": 64},
                       "email": {"type": "string", "format": "email"},
                       "timezone": {"type": "string", "example": "Europe/Berlin"},
                       "marketing_opt_in": {"type": "boolean"}},
        "minProperties": 1, "additionalProperties": False},

    # ---- SchemaStore subsets ----
    # .eslintrc (json.schemastore.org/eslintrc): the top-level keys most configs use.
    "eslintrc_subset": {
        "$schema": DRAFT7,
        "definitions": {
            "rule": {"oneOf": [{"type": "number", "minimum": 0, "maximum": 2, "description": "0 off, 1 warn, 2 error"},
                               {"enum": ["off", "warn", "error"]},
                               {"type": "array"}]},
            "stringOrStringArray": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}},
        "type": "object",
        "properties": {
            "root": {"type": "boolean", "description": "Stop looking for configuration in parent folders"},
            "extends": {"$ref": "#/definitions/stringOrStringArray"},
            "env": {"type": "object", "properties": {"browser": BOOL, "node": BOOL, "es2021": BOOL, "jest": BOOL}},
            "parser": {"type": "string"},
            "parserOptions": {"type": "object", "properties": {
                "ecmaVersion": {"enum": [3, 5, 6, 2015, 2016, 2017, 2018, 2019, 2020, 2021, 2022, "latest"]},
                "sourceType": {"enum": ["script", "module", "commonjs"]},
                "ecmaFeatures": {"type": "object", "properties": {"jsx": BOOL}}}},
            "plugins": {"type": "array", "items": {"type": "string"}},
            "rules": {"type": "object", "additionalProperties": {"$ref": "#/definitions/rule"}},
            "ignorePatterns": {"$ref": "#/definitions/stringOrStringArray"}}},
    # compose-spec.json: a service, with its list_or_dict / list_of_strings definitions.
    "compose_service_subset": {
        "$schema": DRAFT7, "type": "object",
        "properties": {
            "image": {"type": "string"},
            "container_name": {"type": "string"},
            "build": {"oneOf": [{"type": "string"},
                                {"type": "object",
                                 "properties": {"context": {"type": "string"}, "dockerfile": {"type": "string"},
                                                "args": {"$ref": "#/definitions/list_or_dict"},
                                                "target": {"type": "string"}},
                                 "additionalProperties": False}]},
            "command": {"oneOf": [{"type": "null"}, {"type": "string"},
                                  {"type": "array", "items": {"type": "string"}}]},
            "environment": {"$ref": "#/definitions/list_or_dict"},
            "ports": {"type": "array", "items": {"oneOf": [
                {"type": "number", "format": "ports"}, {"type": "string", "format": "ports"},
                {"type": "object", "properties": {"target": {"type": "integer"},
                                                  "published": {"type": ["string", "integer"]},
                                                  "protocol": {"type": "string"}, "mode": {"type": "string"}},
                 "additionalProperties": False}]}, "uniqueItems": True},
            "volumes": {"type": "array", "items": {"type": "string"}},
            "depends_on": {"$ref": "#/definitions/list_of_strings"},
            "restart": {"type": "string"}},
        "additionalProperties": False,
        "definitions": {
            "list_of_strings": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "list_or_dict": {"oneOf": [
                {"type": "object", "patternProperties": {".+": {"type": ["string", "number", "boolean", "null"]}},
                 "additionalProperties": False},
                {"type": "array", "items": {"type": "string"}, "uniqueItems": True}]}}},
    # github-workflow.json: a job, with its step definition.
    "gha_job_subset": {
        "$schema": DRAFT7,
        "definitions": {
            "name": {"type": "string", "pattern": "^[_a-zA-Z][a-zA-Z0-9_-]*$"},
            "env": {"type": "object", "additionalProperties": {"oneOf": [STR, NUM, BOOL]}},
            "step": {
                "type": "object", "additionalProperties": False,
                "dependencies": {"working-directory": ["run"], "shell": ["run"]},
                "oneOf": [{"required": ["uses"]}, {"required": ["run"]}],
                "properties": {"id": {"type": "string"}, "if": {"type": ["boolean", "number", "string"]},
                               "name": {"type": "string"}, "uses": {"type": "string"}, "run": {"type": "string"},
                               "working-directory": {"type": "string"}, "shell": {"type": "string"},
                               "with": {"$ref": "#/definitions/env"}, "env": {"$ref": "#/definitions/env"},
                               "continue-on-error": {"type": "boolean", "default": False},
                               "timeout-minutes": {"type": "number"}}}},
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "needs": {"oneOf": [{"type": "array", "items": {"$ref": "#/definitions/name"}, "minItems": 1},
                                {"$ref": "#/definitions/name"}]},
            "runs-on": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
            "env": {"$ref": "#/definitions/env"},
            "timeout-minutes": {"type": "number", "default": 360},
            "steps": {"type": "array", "items": {"$ref": "#/definitions/step"}, "minItems": 1}},
        "required": ["runs-on"], "additionalProperties": False},
    # package.json: the name as the real schema constrains it, a few other fields.
    "package_json_subset": {
        "$schema": DRAFT7, "title": "JSON schema for NPM package.json files",
        "definitions": {
            "person": {"description": "A person who has been involved in creating or maintaining this package.",
                       "type": ["object", "string"], "required": ["name"],
                       "properties": {"name": {"type": "string"}, "url": {"type": "string", "format": "uri"},
                                      "email": {"type": "string", "format": "email"}}},
            "dependency": {"description":
                           "Dependencies are specified with a simple hash of package name to version range.",
                           "type": "object", "additionalProperties": {"type": "string"}}},
        "type": "object",
        "properties": {
            "name": {"description": "The name of the package.", "type": "string", "maxLength": 214, "minLength": 1,
                     "pattern": "^(?:(?:@(?:[a-z0-9-*~][a-z0-9-*._~]*)?/[a-z0-9-._~])|[a-z0-9-~])[a-z0-9-._~]*$"},
            "version": {"description": "Version must be parseable by node-semver.", "type": "string"},
            "description": {"type": "string"},
            "keywords": {"type": "array", "items": {"type": "string"}},
            "license": {"type": "string"},
            "author": {"$ref": "#/definitions/person"},
            "type": {"type": "string", "enum": ["commonjs", "module"], "default": "commonjs"},
            "main": {"type": "string"},
            "scripts": {"type": "object", "additionalProperties": {"type": "string"}},
            "dependencies": {"$ref": "#/definitions/dependency"},
            "devDependencies": {"$ref": "#/definitions/dependency"},
            "private": {"type": "boolean"},
            "engines": {"type": "object", "additionalProperties": {"type": "string"}}}},

    # ---- agent and API payloads ----
    "react_step": {
        "type": "object", "title": "AgentStep",
        "properties": {"thought": {"type": "string", "description": "Reasoning about what to do next"},
                       "action": {"type": "string", "enum": ["search", "lookup", "calculator", "final_answer"]},
                       "action_input": {"anyOf": [{"type": "string"},
                                                  {"type": "object", "additionalProperties":
                                                   {"type": ["string", "number", "boolean"]}}]}},
        "required": ["thought", "action", "action_input"], "additionalProperties": False},
    "plan_dag": {
        "type": "object", "title": "Plan",
        "properties": {
            "goal": {"type": "string"},
            "steps": {"type": "array", "minItems": 1, "maxItems": 6, "items": {
                "type": "object",
                "properties": {"id": {"type": "integer", "minimum": 1},
                               "tool": {"type": "string",
                                        "enum": ["web_search", "read_file", "write_file", "run_python", "ask_user"]},
                               "args": {"type": "object", "additionalProperties": {"type": "string"},
                                        "maxProperties": 8},
                               "depends_on": {"type": "array", "items": {"type": "integer", "minimum": 1}}},
                "required": ["id", "tool", "args", "depends_on"], "additionalProperties": False}},
            "parallel_groups": {"type": "array", "description": "Step ids that may run at the same time",
                                "items": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}}},
        "required": ["goal", "steps", "parallel_groups"], "additionalProperties": False},
    "entity_spans": {
        "type": "object",
        "properties": {
            "entities": {"type": "array", "items": {
                "type": "object",
                "properties": {"text": {"type": "string"},
                               "label": {"type": "string",
                                         "enum": ["PERSON", "ORG", "LOC", "DATE", "MONEY", "PRODUCT"]},
                               "start": {"type": "integer", "minimum": 0},
                               "end": {"type": "integer", "exclusiveMinimum": 0},
                               "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
                "required": ["text", "label", "start", "end"], "additionalProperties": False}},
            "language": {"type": "string", "pattern": "^[a-z]{2}(-[A-Z]{2})?$"}},
        "required": ["entities"], "additionalProperties": False},
    "jsonrpc_request": {
        "$schema": DRAFT7, "title": "JSON-RPC 2.0 request", "type": "object",
        "properties": {"jsonrpc": {"const": "2.0"},
                       "method": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_./]*$"},
                       "params": {"type": ["array", "object"]},
                       "id": {"type": ["string", "integer", "null"]}},
        "required": ["jsonrpc", "method"], "additionalProperties": False},
    # geojson.org's Feature.json, with Point / LineString / Polygon geometries.
    "geojson_feature": {
        "$schema": DRAFT7, "$id": "https://geojson.org/schema/Feature.json", "title": "GeoJSON Feature",
        "type": "object", "required": ["type", "properties", "geometry"],
        "properties": {
            "type": {"type": "string", "enum": ["Feature"]},
            "id": {"oneOf": [{"type": "number"}, {"type": "string"}]},
            "properties": {"oneOf": [{"type": "null"}, {"type": "object"}]},
            "geometry": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Point"},
                                   {"$ref": "#/definitions/LineString"}, {"$ref": "#/definitions/Polygon"}]},
            "bbox": {"type": "array", "minItems": 4, "items": {"type": "number"}}},
        "definitions": {
            "Point": {"title": "GeoJSON Point", "type": "object", "required": ["type", "coordinates"],
                      "properties": {"type": {"type": "string", "enum": ["Point"]},
                                     "coordinates": {"type": "array", "minItems": 2, "items": {"type": "number"}}}},
            "LineString": {"title": "GeoJSON LineString", "type": "object", "required": ["type", "coordinates"],
                           "properties": {"type": {"type": "string", "enum": ["LineString"]},
                                          "coordinates": {"type": "array", "minItems": 2, "items": {
                                              "type": "array", "minItems": 2, "items": {"type": "number"}}}}},
            "Polygon": {"title": "GeoJSON Polygon", "type": "object", "required": ["type", "coordinates"],
                        "properties": {"type": {"type": "string", "enum": ["Polygon"]},
                                       "coordinates": {"type": "array", "items": {
                                           "type": "array", "minItems": 4, "items": {
                                               "type": "array", "minItems": 2, "items": {"type": "number"}}}}}}}},
    "payment_intent": {
        "type": "object", "title": "PaymentIntent",
        "properties": {
            "amount": {"type": "string", "pattern": "^\\d+\\.\\d{2}$", "description": "Decimal amount, e.g. 12.50"},
            "currency": {"type": "string",
                         "enum": ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "BRL"]},
            "country": {"type": "string", "description": "ISO 3166-1 alpha-2 country code",
                        "enum": ["US", "GB", "DE", "FR", "JP", "CH", "CA", "AU", "CN", "IN", "BR", "NL", "SE", "ES",
                                 "IT"]},
            "customer_email": {"type": "string", "format": "email"},
            "capture": {"type": "string", "enum": ["automatic", "manual"], "default": "automatic"},
            "idempotency_key": {"type": "string", "format": "uuid"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500},
                         "maxProperties": 50}},
        "required": ["amount", "currency", "country", "idempotency_key"], "additionalProperties": False},
    "semver_release": {
        "type": "object",
        "properties": {
            "package": {"type": "string"},
            "version": {"type": "string", "pattern": SEMVER},
            "previous_version": {"anyOf": [{"type": "string", "pattern": SEMVER}, {"type": "null"}]},
            "released": {"type": "string", "format": "date"},
            "channel": {"enum": ["stable", "beta", "nightly"]},
            "changes": {"type": "array", "minItems": 1, "maxItems": 5, "items": {
                "type": "object",
                "properties": {"kind": {"enum": ["added", "changed", "deprecated", "removed", "fixed", "security"]},
                               "summary": {"type": "string", "maxLength": 100}},
                "required": ["kind", "summary"]}}},
        "required": ["package", "version", "released", "changes"]},
    # Free time as [start, end] pairs: tuples of formatted strings inside an array.
    "availability_slots": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {
            "date": {"type": "string", "format": "date"},
            "timezone": {"type": "string",
                         "enum": ["UTC", "America/New_York", "Europe/London", "Europe/Berlin", "Asia/Tokyo"]},
            "slots": {"type": "array", "maxItems": 4, "items": {
                "type": "array", "prefixItems": [{"type": "string", "format": "time"},
                                                 {"type": "string", "format": "time"}],
                "items": False, "minItems": 2}},
            "duration_minutes": {"type": "integer", "exclusiveMinimum": 0, "maximum": 480}},
        "required": ["date", "slots"]},
    # A search filter: a condition, or and/or of filters (recursion through anyOf of objects).
    "search_filter_recursive": {
        "$defs": {
            "Filter": {"anyOf": [{"$ref": "#/$defs/Condition"}, {"$ref": "#/$defs/And"}, {"$ref": "#/$defs/Or"}]},
            "Condition": {"type": "object",
                          "properties": {"field": {"type": "string", "enum": ["title", "author", "year", "tags"]},
                                         "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "contains"]},
                                         "value": {"anyOf": [STR, NUM, BOOL]}},
                          "required": ["field", "op", "value"], "additionalProperties": False},
            "And": {"type": "object",
                    "properties": {"and": {"type": "array", "items": {"$ref": "#/$defs/Filter"},
                                           "minItems": 2, "maxItems": 3}},
                    "required": ["and"], "additionalProperties": False},
            "Or": {"type": "object",
                   "properties": {"or": {"type": "array", "items": {"$ref": "#/$defs/Filter"},
                                         "minItems": 2, "maxItems": 3}},
                   "required": ["or"], "additionalProperties": False}},
        "type": "object",
        "properties": {"query": {"type": "string"}, "filter": {"$ref": "#/$defs/Filter"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}},
        "required": ["query", "filter"], "additionalProperties": False},
    # Webhook headers: names constrained by propertyNames.
    "webhook_headers_property_names": {
        "type": "object",
        "properties": {"url": {"type": "string", "format": "uri"},
                       "method": {"enum": ["POST", "PUT"]},
                       "headers": {"type": "object", "propertyNames": {"pattern": "^[A-Za-z0-9-]+$"},
                                   "additionalProperties": {"type": "string"}, "maxProperties": 10},
                       "retries": {"type": "integer", "minimum": 0, "maximum": 5}},
        "required": ["url", "method"]},
    # json-schema.org's conditional-validation example.
    "billing_dependent_required": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "credit_card": {"type": "number"},
                       "billing_address": {"type": "string"}},
        "required": ["name"],
        "dependentRequired": {"credit_card": ["billing_address"]}},
    # json-schema.org's 2020-12 extension idiom: allOf a base, closed with unevaluatedProperties.
    "extended_address_unevaluated": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"address": {"type": "object",
                              "properties": {"street_address": {"type": "string"}, "city": {"type": "string"},
                                             "state": {"type": "string"}},
                              "required": ["street_address", "city", "state"]}},
        "allOf": [{"$ref": "#/$defs/address"}],
        "properties": {"type": {"enum": ["residential", "business"]}},
        "required": ["type"],
        "unevaluatedProperties": False},
}

# The word each refused schema's 400 must contain (the keyword, or the format
# or regex feature, that the converter names).
REFUSED_MORE = {
    "pyd_invoice_decimal": "look-ahead",  # Decimal: a pattern with (?!...)
    "pyd_article_tags_set": "uniqueItems",  # set[str]
    "patch_user_min_properties": "minProperties",
    "compose_service_subset": "patternProperties",
    "gha_job_subset": "dependencies",
    "package_json_subset": "minLength",  # name: minLength / maxLength with pattern
    "webhook_headers_property_names": "propertyNames",
    "billing_dependent_required": "dependentRequired",
    "extended_address_unevaluated": "unevaluatedProperties",
}

