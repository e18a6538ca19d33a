// The driver a child process makes, for crash tests (the conformance suite's and this package's):
// the built @rowclaim/mysql against ROWCLAIM_MYSQL_URL (default: the local MariaDB).
import { createMysqlDriver } from "@rowclaim/mysql";

export function createDriver() {
  return createMysqlDriver({ url: process.env.ROWCLAIM_MYSQL_URL || "mysql://root@127.0.0.1:3306/test" });
}
