-- The referee's Parquet archive in DuckDB (docs/analytics.md): run where the archive is
-- (a directory written by `referee archive --to archive`), or replace 'archive/' by its path.
-- Hive partitioning gives every row the column `day` of its file's directory.
CREATE OR REPLACE VIEW archived_journal AS
SELECT * FROM read_parquet('archive/journal/*/*.parquet', hive_partitioning = true);
CREATE OR REPLACE VIEW archived_verdicts AS
SELECT * FROM read_parquet('archive/verdicts/*/*.parquet', hive_partitioning = true);
CREATE OR REPLACE VIEW archived_dead_letters AS
SELECT * FROM read_parquet('archive/dead_letters/*/*.parquet', hive_partitioning = true);

-- verdicts by day and type
CREATE OR REPLACE TABLE verdicts_by_day AS
SELECT day, type, count(*) AS verdicts FROM archived_verdicts GROUP BY ALL ORDER BY ALL;

-- the games won in the archive, and by whom (the body is the canonical JSON published)
CREATE OR REPLACE TABLE games_won AS
SELECT game_id, body::JSON ->> 'winner' AS winner, recorded_at
FROM archived_verdicts WHERE type = 'GameWon' ORDER BY game_id;

-- what the referee heard, by outcome, and the rejections by reason
CREATE OR REPLACE TABLE outcomes AS
SELECT outcome, reason, count(*) AS records FROM archived_journal GROUP BY ALL ORDER BY ALL;
