/**
 * The Standard Schema interface (standardschema.dev, version 1), written out here so that a
 * table may take a zod, valibot or arktype schema (or any other that implements it) without
 * rowclaim depending on any of them; and the checks the broker runs with such a schema.
 *
 * @module
 */

/** A schema in the Standard Schema form: anything with a `~standard` property of this shape. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties. */
  readonly "~standard": StandardSchemaV1.Props<Input, Output>;
}

/** The types of the Standard Schema interface. */
export declare namespace StandardSchemaV1 {
  /** The `~standard` property. */
  export interface Props<Input = unknown, Output = Input> {
    /** The version of the interface: 1. */
    readonly version: 1;
    /** The library that made the schema (for example `"zod"`). */
    readonly vendor: string;
    /** Checks a value; returns the output value or the issues, possibly asynchronously. */
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    /** Type-only: the input and output types of the schema. */
    readonly types?: Types<Input, Output> | undefined;
  }
  /** What `validate` returns. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;
  /** A value that passed. */
  export interface SuccessResult<Output> {
    /** The output value. */
    readonly value: Output;
    /** Absent on success. */
    readonly issues?: undefined;
  }
  /** A value that failed. */
  export interface FailureResult {
    /** What is wrong, at least one issue. */
    readonly issues: ReadonlyArray<Issue>;
  }
  /** One problem with a value. */
  export interface Issue {
    /** The problem, for people. */
    readonly message: string;
    /** Where in the value, if not at its root. */
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }
  /** A path segment given as an object. */
  export interface PathSegment {
    /** The key of this segment. */
    readonly key: PropertyKey;
  }
  /** The type-only input and output types. */
  export interface Types<Input = unknown, Output = Input> {
    /** The type a value must have to be checked. */
    readonly input: Input;
    /** The type a checked value has. */
    readonly output: Output;
  }
  /** The input type of a schema. */
  export type InferInput<Schema extends StandardSchemaV1> = NonNullable<
    Schema["~standard"]["types"]
  >["input"];
  /** The output type of a schema. */
  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<
    Schema["~standard"]["types"]
  >["output"];
}

/** Whether `value` looks like a Standard Schema (version 1). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const props = (value as { "~standard"?: unknown })["~standard"];
  return (
    typeof props === "object" &&
    props !== null &&
    (props as { version?: unknown }).version === 1 &&
    typeof (props as { validate?: unknown }).validate === "function"
  );
}

/** The path of an issue as text: `to`, `items[2].sku`, or `(root)`. */
export function issuePath(issue: StandardSchemaV1.Issue): string {
  const path = issue.path ?? [];
  if (path.length === 0) return "(root)";
  let text = "";
  for (const segment of path) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    if (typeof key === "number") text += `[${key}]`;
    else text += text === "" ? String(key) : `.${String(key)}`;
  }
  return text;
}

/** The issues of a failed check, one line each: `path: message`. */
export function describeIssues(issues: ReadonlyArray<StandardSchemaV1.Issue>): string {
  return issues.map((issue) => `${issuePath(issue)}: ${issue.message}`).join("; ");
}

/** Runs a schema's check on `value`. */
export async function checkWithSchema(
  schema: StandardSchemaV1,
  value: unknown,
): Promise<StandardSchemaV1.Result<unknown>> {
  return await schema["~standard"].validate(value);
}
