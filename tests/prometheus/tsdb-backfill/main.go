// tsdb-backfill writes series of evenly spaced samples straight into TSDB blocks of a
// Prometheus data directory, with the TSDB library of Prometheus 2.42 (module v0.42.0, the
// release tests/prometheus/install.sh installs), instead of promtool's OpenMetrics import
// (hours for 28 days of 1,000 GPUs on 2 cores).
//
//	tsdb-backfill [-block 744h] DATA_DIR FILE...
//
// Each FILE holds records, repeated to EOF (tests/prometheus/series_file.py writes them):
//
//	uint32 little-endian N
//	N bytes of JSON {"labels": {"__name__": ..., ...}, "start_ms": int, "step_ms": int, "count": int}
//	count float64 little-endian values; the sample i is at start_ms + i*step_ms, NaN = no sample
//
// Memory: a first pass keeps only each record's header and the file offset of its values;
// each block is then written series by series, reading that series' values for the block's
// window with one pread, so raw values are never all held. The library's head keeps the
// block's samples as compressed chunks, memory-mapped from a temporary directory once full.
//
// Block layout: consecutive windows of -block (default 31 days, 744h) from the earliest
// sample. 31 days is Prometheus' largest block duration (min(retention/10, 31d) with the
// 400d retention the tests use), so Prometheus loads 28 days as one block it never compacts
// again: its largest compaction range is 486h and a block longer than that is left alone, so
// no background compaction runs while a benchmark queries it, and a query opens one index.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// commitEvery: two full chunks (120 samples each) per commit.
const commitEvery = 240

type header struct {
	Labels  map[string]string `json:"labels"`
	StartMs *int64            `json:"start_ms"`
	StepMs  *int64            `json:"step_ms"`
	Count   *int64            `json:"count"`
}

// series is one record without its values: where they are and what they mean.
type series struct {
	file   int
	offset int64 // of the first value
	lset   labels.Labels
	start  int64
	step   int64
	count  int64
	where  string // FILE:record N, for errors
}

func (s *series) first() int64 { return s.start }
func (s *series) last() int64  { return s.start + (s.count-1)*s.step }

// scan reads the headers of one file and seeks past the values.
func scan(idx int, path string, f *os.File) ([]*series, error) {
	var out []*series
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var lenBuf [4]byte
	pos := int64(0)
	for rec := 1; ; rec++ {
		where := fmt.Sprintf("%s: record %d (byte %d)", path, rec, pos)
		if pos == size {
			return out, nil
		}
		if _, err := f.ReadAt(lenBuf[:], pos); err != nil {
			return nil, fmt.Errorf("%s: record length cut short: %w", where, err)
		}
		n := int64(binary.LittleEndian.Uint32(lenBuf[:]))
		js := make([]byte, n)
		if _, err := f.ReadAt(js, pos+4); err != nil {
			return nil, fmt.Errorf("%s: header of %d bytes cut short: %w", where, n, err)
		}
		var h header
		if err := json.Unmarshal(js, &h); err != nil {
			return nil, fmt.Errorf("%s: header is not the JSON {labels, start_ms, step_ms, count}: %w", where, err)
		}
		if h.StartMs == nil || h.StepMs == nil || h.Count == nil || len(h.Labels) == 0 {
			return nil, fmt.Errorf("%s: header %s lacks labels, start_ms, step_ms or count", where, js)
		}
		if *h.StepMs <= 0 || *h.Count < 0 {
			return nil, fmt.Errorf("%s: step_ms %d must be > 0 and count %d >= 0", where, *h.StepMs, *h.Count)
		}
		if h.Labels["__name__"] == "" {
			return nil, fmt.Errorf("%s: labels %v have no __name__", where, h.Labels)
		}
		// An empty label value is the same as no label in Prometheus.
		m := make(map[string]string, len(h.Labels))
		for k, v := range h.Labels {
			if v != "" {
				m[k] = v
			}
		}
		s := &series{file: idx, offset: pos + 4 + n, lset: labels.FromMap(m),
			start: *h.StartMs, step: *h.StepMs, count: *h.Count, where: where}
		pos = s.offset + 8*s.count
		if pos > size {
			return nil, fmt.Errorf("%s: %d values announced, the file ends %d bytes short", where, s.count, pos-size)
		}
		if s.count > 0 {
			out = append(out, s)
		}
	}
}

func run(dataDir string, paths []string, blockDur time.Duration) error {
	began := time.Now()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	files := make([]*os.File, len(paths))
	var all []*series
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		files[i] = f
		ss, err := scan(i, p, f)
		if err != nil {
			return err
		}
		all = append(all, ss...)
	}
	if len(all) == 0 {
		return fmt.Errorf("no samples in %s", strings.Join(paths, " "))
	}
	// The same label set twice would be appended twice; name both records.
	sort.SliceStable(all, func(i, j int) bool { return labels.Compare(all[i].lset, all[j].lset) < 0 })
	var dups []string
	for i := 1; i < len(all); i++ {
		if labels.Equal(all[i-1].lset, all[i].lset) {
			dups = append(dups, fmt.Sprintf("%s and %s both write %s", all[i-1].where, all[i].where, all[i].lset))
		}
	}
	if len(dups) > 0 {
		return fmt.Errorf("duplicate series (merge them into one record):\n  %s", strings.Join(dups, "\n  "))
	}
	mint, maxt := all[0].first(), all[0].last()
	for _, s := range all {
		mint = min(mint, s.first())
		maxt = max(maxt, s.last())
	}

	width := blockDur.Milliseconds()
	var buf []byte
	blocks, samples := 0, int64(0)
	for ws := mint; ws <= maxt; ws += width {
		we := ws + width // window [ws, we)
		// 2*width: the head accepts samples back to its newest minus half its chunk range,
		// so every sample of the window is appendable whatever order the series come in
		// (promtool's backfill does the same).
		w, err := tsdb.NewBlockWriter(log.NewNopLogger(), dataDir, 2*width)
		if err != nil {
			return err
		}
		n, err := writeWindow(w, files, all, ws, we, &buf)
		if err == nil && n > 0 {
			_, err = w.Flush(context.Background())
			blocks++
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		samples += n
	}
	fmt.Printf("tsdb-backfill: %d blocks, %d series, %d samples written to %s in %.1f s\n",
		blocks, len(all), samples, dataDir, time.Since(began).Seconds())
	return nil
}

// firstIndexAtOrAfter is the first index i >= 0 with start + i*step >= t.
func firstIndexAtOrAfter(t, start, step int64) int64 {
	if t <= start {
		return 0
	}
	return (t - start + step - 1) / step
}

func writeWindow(w *tsdb.BlockWriter, files []*os.File, all []*series, ws, we int64, buf *[]byte) (int64, error) {
	ctx := context.Background()
	written := int64(0)
	for _, s := range all {
		i0 := firstIndexAtOrAfter(ws, s.start, s.step)
		i1 := min(firstIndexAtOrAfter(we, s.start, s.step), s.count)
		if i0 >= i1 {
			continue
		}
		need := int((i1 - i0) * 8)
		if cap(*buf) < need {
			*buf = make([]byte, need)
		}
		b := (*buf)[:need]
		if _, err := files[s.file].ReadAt(b, s.offset+8*i0); err != nil {
			return 0, fmt.Errorf("%s: reading values: %w", s.where, err)
		}
		app := w.Appender(ctx)
		var ref storage.SeriesRef
		pending := 0
		for i := i0; i < i1; i++ {
			v := math.Float64frombits(binary.LittleEndian.Uint64(b[(i-i0)*8:]))
			if math.IsNaN(v) {
				continue
			}
			r, err := app.Append(ref, s.lset, s.start+i*s.step, v)
			if err != nil {
				_ = app.Rollback()
				return 0, fmt.Errorf("%s: %s at %d: %w", s.where, s.lset, s.start+i*s.step, err)
			}
			ref = r
			written++
			// Commit every commitEvery samples: the head's isolation keeps 8 bytes per sample
			// of a commit in the series' transaction ring, which never shrinks (one commit of
			// a whole series made the tool hold ~8 bytes for every sample written: 830 MiB
			// RSS for 48 million samples).
			if pending++; pending == commitEvery {
				if err := app.Commit(); err != nil {
					return 0, fmt.Errorf("%s: %w", s.where, err)
				}
				app, pending = w.Appender(ctx), 0
			}
		}
		if err := app.Commit(); err != nil {
			return 0, fmt.Errorf("%s: %w", s.where, err)
		}
	}
	return written, nil
}

func main() {
	blockDur := flag.Duration("block", 31*24*time.Hour, "longest time a block covers")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [-block 744h] DATA_DIR FILE...\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 2 || *blockDur < time.Hour {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Args()[1:], *blockDur); err != nil {
		fmt.Fprintf(os.Stderr, "tsdb-backfill: %v\n", err)
		os.Exit(1)
	}
}
