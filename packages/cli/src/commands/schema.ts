/**
 * `rowclaim schema`: prints the recommended `CREATE TABLE` and claim-order index of a table, as
 * the dialect's driver writes it (`driver.schemaSql`).
 *
 * @module
 */
import type { ClaimFormName, PayloadType } from "@rowclaim/core";
import { booleanFlag, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_OK } from "../command.js";
import { schemaDriver } from "../connect.js";
import { defaultKey, formNames, standardTable } from "../tables.js";
import { type Dialect, dialects } from "../target.js";

/** The `schema` command. */
export const schemaCommand: Command = {
  spec: {
    name: "schema",
    summary: "print the recommended CREATE TABLE and index for a queue table",
    details: [
      "Columns: id, payload, attempt, run_at, priority, queue (the group), and with the flags below",
      "processed_at, headers, locked_until (lease form) and the columns an advisory key names.",
      "Nothing is executed: pipe the output into psql, mariadb or sqlite3.",
    ],
    flags: {
      dialect: {
        type: "string",
        value: "DIALECT",
        choices: dialects,
        required: true,
        description: "The database's SQL dialect.",
      },
      table: { type: "string", value: "NAME", required: true, description: "The table's name." },
      form: {
        type: "string",
        value: "FORM",
        choices: formNames,
        defaultText: "lease",
        description: "The claim form the table takes.",
      },
      key: {
        type: "string",
        value: "TEMPLATE",
        defaultText: '"<table>:{queue}"',
        description: "Advisory form: the key template; placeholders naming new columns add them.",
      },
      "payload-type": {
        type: "string",
        value: "TYPE",
        choices: ["json", "text", "bytes"],
        defaultText: "json",
        description: "How the payload is held.",
      },
      "processed-at": {
        type: "boolean",
        description: "Add processed_at: ack marks rows instead of deleting them.",
      },
      headers: { type: "boolean", description: "Add a headers column (a JSON map beside the payload)." },
    },
    examples: [
      "rowclaim schema --dialect postgres --table jobs",
      "rowclaim schema --dialect mysql --table emails --form advisory --key 'emails-{account}'",
      "rowclaim schema --dialect sqlite --table tasks --processed-at | sqlite3 app.db",
    ],
  },
  async run(flags, io) {
    const dialect = stringFlag(flags, "dialect") as Dialect;
    const name = stringFlag(flags, "table") as string;
    const form = stringFlag(flags, "form", "lease") as ClaimFormName;
    const key = stringFlag(flags, "key");
    if (key !== undefined && form !== "advisory") {
      throw new UsageError(
        `--key is the advisory form's key template; add --form advisory or leave --key out.`,
        "schema",
      );
    }
    const table = standardTable({
      name,
      form,
      payloadType: stringFlag(flags, "payload-type", "json") as PayloadType,
      processedAt: booleanFlag(flags, "processed-at"),
      headers: booleanFlag(flags, "headers"),
      ...(form === "advisory" ? { key: key ?? defaultKey(name) } : {}),
    });
    const { sql, offered, driverName } = await schemaDriver(dialect, (driver) => ({
      sql: driver.schemaSql(table),
      offered: driver.capabilities.forms.includes(form),
      driverName: driver.name,
    }));
    io.stdout.write(sql.endsWith("\n") ? sql : `${sql}\n`);
    if (!offered) {
      io.stderr.write(
        `rowclaim schema: note: the ${driverName} driver does not offer the ${form} form; subscribing to this table will fail.\n`,
      );
    }
    return EXIT_OK;
  },
};
