/** The `run_id` argument, as every tool that names a run takes it. */
export const RUN_ID = {
  type: "string",
  minLength: 1,
  maxLength: 200,
  description: "A run's id, as start_run or list_runs gave it (a unique prefix of one will do).",
} as const;
