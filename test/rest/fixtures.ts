import {
  create,
  createFileRegistry,
  type DescMessage,
  type DescService,
  type MessageInitShape,
  setExtension,
} from "@bufbuild/protobuf";
import { protoCamelCase } from "@bufbuild/protobuf/reflect";
import {
  type DescriptorProto,
  type DescriptorProtoSchema,
  type FieldDescriptorProto,
  type FieldDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_field_mask,
  file_google_protobuf_timestamp,
  FieldDescriptorProto_Label as Label,
  MethodOptionsSchema,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";

type FieldInit = MessageInitShape<typeof FieldDescriptorProtoSchema>;

// A proto3 field: `f("page_size", 3, Type.INT32)`, with options for repeated and message types.
function f(
  name: string,
  number: number,
  type: Type,
  more: Partial<Pick<FieldDescriptorProto, "typeName">> & { repeated?: boolean } = {},
): FieldInit {
  return {
    name,
    number,
    type,
    jsonName: protoCamelCase(name),
    label: more.repeated ? Label.REPEATED : Label.OPTIONAL,
    ...(more.typeName ? { typeName: more.typeName } : {}),
  };
}

const msg = (name: string, ...field: FieldInit[]): { name: string; field: FieldInit[] } => ({
  name,
  field,
});

/** An HTTP rule as the `google.api.http` option of a method. */
export type RuleInit = MessageInitShape<typeof HttpRuleSchema>;

/**
 * Build `resttest.ThingsService` from descriptors made in code, so that tests can cover
 * every scalar kind, enums, repeated fields and maps, and give methods any HTTP rules,
 * including broken ones.
 */
export function thingsFixture(rules: Record<string, RuleInit> = defaultRules) {
  const labelsEntry: MessageInitShape<typeof DescriptorProtoSchema> = {
    ...msg("LabelsEntry", f("key", 1, Type.STRING), f("value", 2, Type.INT32)),
    options: { mapEntry: true },
  };
  const thing: MessageInitShape<typeof DescriptorProtoSchema> = {
    ...msg(
      "Thing",
      f("uid", 1, Type.STRING),
      f("name", 2, Type.STRING),
      f("description", 3, Type.STRING),
      f("size", 4, Type.INT64),
      f("enabled", 5, Type.BOOL),
      f("kind", 6, Type.ENUM, { typeName: ".resttest.Kind" }),
      f("tags", 7, Type.STRING, { repeated: true }),
      f("inner", 8, Type.MESSAGE, { typeName: ".resttest.Inner" }),
      f("expire_time", 9, Type.MESSAGE, { typeName: ".google.protobuf.Timestamp" }),
      f("labels", 10, Type.MESSAGE, { typeName: ".resttest.Thing.LabelsEntry", repeated: true }),
      f("parts", 11, Type.MESSAGE, { typeName: ".resttest.Inner", repeated: true }),
    ),
    nestedType: [labelsEntry as DescriptorProto],
  };
  const methods = [
    ["ListThings", "ListThingsRequest", "ListThingsResponse"],
    ["GetThing", "GetThingRequest", "Thing"],
    ["CreateThing", "CreateThingRequest", "Thing"],
    ["UpdateThing", "UpdateThingRequest", "Thing"],
    ["RedeemThing", "RedeemThingRequest", "Thing"],
  ] as const;
  const file = create(FileDescriptorProtoSchema, {
    name: "resttest/things.proto",
    package: "resttest",
    syntax: "proto3",
    dependency: ["google/protobuf/field_mask.proto", "google/protobuf/timestamp.proto"],
    enumType: [
      {
        name: "Kind",
        value: [
          { name: "KIND_UNSPECIFIED", number: 0 },
          { name: "SMALL", number: 1 },
          { name: "LARGE", number: 2 },
        ],
      },
    ],
    messageType: [
      msg(
        "Inner",
        f("descendants_of", 1, Type.STRING),
        f("children_of", 2, Type.STRING),
        f("depth", 3, Type.UINT32),
      ),
      thing,
      msg(
        "ListThingsRequest",
        f("uidp", 1, Type.MESSAGE, { typeName: ".resttest.Inner" }),
        f("name", 2, Type.STRING),
        f("page_size", 3, Type.INT32),
        f("min_size", 4, Type.INT64),
        f("max_size", 5, Type.UINT64),
        f("show_deleted", 6, Type.BOOL),
        f("kind", 7, Type.ENUM, { typeName: ".resttest.Kind" }),
        f("kinds", 8, Type.ENUM, { typeName: ".resttest.Kind", repeated: true }),
        f("tags", 9, Type.STRING, { repeated: true }),
        f("ratio", 10, Type.DOUBLE),
        f("blob", 11, Type.BYTES),
        f("after", 12, Type.MESSAGE, { typeName: ".google.protobuf.Timestamp" }),
        f("read_mask", 13, Type.MESSAGE, { typeName: ".google.protobuf.FieldMask" }),
        f("sizes", 14, Type.INT64, { repeated: true }),
        f("thing", 15, Type.MESSAGE, { typeName: ".resttest.Thing" }),
      ),
      msg(
        "ListThingsResponse",
        f("things", 1, Type.MESSAGE, { typeName: ".resttest.Thing", repeated: true }),
        f("total_count", 2, Type.INT64),
      ),
      msg("GetThingRequest", f("uid", 1, Type.STRING)),
      msg(
        "CreateThingRequest",
        f("parent", 1, Type.STRING),
        f("thing", 2, Type.MESSAGE, { typeName: ".resttest.Thing" }),
        f("validate_only", 3, Type.BOOL),
      ),
      msg(
        "UpdateThingRequest",
        f("thing", 1, Type.MESSAGE, { typeName: ".resttest.Thing" }),
        f("update_mask", 2, Type.MESSAGE, { typeName: ".google.protobuf.FieldMask" }),
      ),
      msg("RedeemThingRequest", f("code", 1, Type.STRING), f("parent", 2, Type.STRING)),
    ],
    service: [
      {
        name: "ThingsService",
        method: methods.map(([name, input, output]) => {
          const options = create(MethodOptionsSchema);
          const rule = rules[name];
          if (rule) setExtension(options, http, create(HttpRuleSchema, rule));
          return {
            name,
            inputType: `.resttest.${input}`,
            outputType: `.resttest.${output}`,
            options,
          };
        }),
      },
    ],
  });
  const registry = createFileRegistry(file, (name) =>
    name === "google/protobuf/field_mask.proto"
      ? file_google_protobuf_field_mask
      : name === "google/protobuf/timestamp.proto"
        ? file_google_protobuf_timestamp
        : undefined,
  );
  const message = (name: string): DescMessage => {
    const desc = registry.getMessage(`resttest.${name}`);
    if (!desc) throw new Error(`no message ${name}`);
    return desc;
  };
  const service = registry.getService("resttest.ThingsService") as DescService;
  return { registry, service, message };
}

/** The rules of ThingsService unless a test gives others. */
export const defaultRules: Record<string, RuleInit> = {
  ListThings: { pattern: { case: "get", value: "/v1/things" } },
  GetThing: { pattern: { case: "get", value: "/v1/things/{uid=**}" } },
  CreateThing: { pattern: { case: "post", value: "/v1/things/{parent=**}" }, body: "thing" },
  UpdateThing: { pattern: { case: "patch", value: "/v1/things/{thing.uid=**}" }, body: "thing" },
  RedeemThing: {
    pattern: { case: "post", value: "/v1/things:redeem" },
    body: "*",
    additionalBindings: [{ pattern: { case: "get", value: "/v1/things:redeem" } }],
  },
};
