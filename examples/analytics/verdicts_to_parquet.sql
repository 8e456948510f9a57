-- The referee's verdict log into DuckDB, then Parquet (docs/analytics.md).
-- Input: verdicts.jsonl, one canonical verdict per line (from PostgreSQL or the topic).
-- Output: verdicts.parquet, one row per verdict; maps stay maps (player -> points).
CREATE OR REPLACE TABLE verdicts AS
SELECT *, try_cast(upper(occurred_at) AS TIMESTAMPTZ) AS occurred_at_ts
FROM read_json(
    'verdicts.jsonl',
    format = 'newline_delimited',
    columns = {
        verdict_id: 'UUID',
        type: 'VARCHAR',
        game_id: 'VARCHAR',
        round: 'BIGINT',
        cause_event_id: 'VARCHAR',
        cause_seq: 'BIGINT',
        occurred_at: 'VARCHAR',
        schema_version: 'INTEGER',
        player: 'VARCHAR',
        foul: 'VARCHAR',
        applied: 'BOOLEAN',
        penalty: 'BIGINT',
        proposer: 'VARCHAR',
        confirmed_by: 'VARCHAR[]',
        open_ends: 'MAP(VARCHAR, BIGINT)',
        reason: 'VARCHAR',
        winners: 'VARCHAR[]',
        winner: 'VARCHAR',
        pip_counts: 'MAP(VARCHAR, BIGINT)',
        awards: 'MAP(VARCHAR, BIGINT)',
        cumulative: 'MAP(VARCHAR, BIGINT)',
        tie: 'BOOLEAN'
    }
);

COPY verdicts TO 'verdicts.parquet' (FORMAT parquet);
