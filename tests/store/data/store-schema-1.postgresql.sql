-- The tables memctx 0.1.0 (store schema 1) creates on PostgreSQL, as its SQLAlchemy models emit them.
CREATE TABLE memctx_schema (
	id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE memctx_threads (
	id VARCHAR NOT NULL, 
	created_at VARCHAR NOT NULL, 
	last_seq INTEGER NOT NULL, 
	batch INTEGER NOT NULL, 
	last_batch INTEGER NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE memctx_batches (
	thread_id VARCHAR NOT NULL, 
	number INTEGER NOT NULL, 
	operation VARCHAR NOT NULL, 
	params TEXT NOT NULL, 
	view TEXT, 
	base_seq INTEGER NOT NULL, 
	created_at VARCHAR NOT NULL, 
	PRIMARY KEY (thread_id, number), 
	FOREIGN KEY(thread_id) REFERENCES memctx_threads (id) ON DELETE CASCADE
);
CREATE TABLE memctx_chunks (
	thread_id VARCHAR NOT NULL, 
	seq INTEGER NOT NULL, 
	chunk_id VARCHAR NOT NULL, 
	origin VARCHAR NOT NULL, 
	batch INTEGER NOT NULL, 
	type VARCHAR NOT NULL, 
	role VARCHAR, 
	action VARCHAR, 
	subtype VARCHAR, 
	content TEXT NOT NULL, 
	metadata TEXT NOT NULL, 
	priority INTEGER NOT NULL, 
	created_at VARCHAR NOT NULL, 
	PRIMARY KEY (thread_id, seq), 
	CONSTRAINT memctx_chunks_thread_chunk_id UNIQUE (thread_id, chunk_id), 
	FOREIGN KEY(thread_id) REFERENCES memctx_threads (id) ON DELETE CASCADE
);
CREATE TABLE memctx_events (
	id SERIAL NOT NULL, 
	thread_id VARCHAR NOT NULL, 
	kind VARCHAR NOT NULL, 
	payload TEXT NOT NULL, 
	created_at VARCHAR NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(thread_id) REFERENCES memctx_threads (id) ON DELETE CASCADE
);
CREATE INDEX memctx_events_thread ON memctx_events (thread_id, id);
CREATE TABLE memctx_token_counts (
	thread_id VARCHAR NOT NULL, 
	seq INTEGER NOT NULL, 
	tokenizer VARCHAR NOT NULL, 
	renderer VARCHAR NOT NULL, 
	tokens INTEGER NOT NULL, 
	PRIMARY KEY (thread_id, seq, tokenizer, renderer), 
	FOREIGN KEY(thread_id, seq) REFERENCES memctx_chunks (thread_id, seq) ON DELETE CASCADE
);
