package audit

import "sync"

// Each audits n inputs each alone, up to workers at once (a grid
// operator's day of captures on all cores), and hands every report to emit
// in input order, from the calling goroutine. open makes input i's Input
// and what closes it; an error opening it goes to emit instead of a
// report. A file's report is the same as auditing it alone, because it is:
// every file has its own Auditor. A worker starts a file only once an
// earlier report was emitted, so at most workers audits are held whatever
// n is. Each returns the first error emit returns, after every audit it
// started has ended.
func Each(cfg Config, n, workers int, open func(i int) (Input, func() error, error), emit func(i int, r *Report, err error) error) error {
	done := make([]chan eachResult, n)
	for i := range done {
		done[i] = make(chan eachResult, 1) // a worker never waits for emit
	}
	slots := make(chan struct{}, max(workers, 1))
	stop := make(chan struct{})
	launched := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(launched)
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				done[i] <- auditOne(cfg, open, i)
			}()
		}
	}()
	var err error
	for i := range n {
		res := <-done[i]
		if err = emit(i, res.r, res.err); err != nil {
			break
		}
		<-slots
	}
	close(stop)
	<-launched
	wg.Wait()
	return err
}

type eachResult struct {
	r   *Report
	err error
}

func auditOne(cfg Config, open func(i int) (Input, func() error, error), i int) eachResult {
	in, closeIt, err := open(i)
	if err != nil {
		return eachResult{err: err}
	}
	defer closeIt()
	a, err := New(cfg)
	if err != nil {
		return eachResult{err: err}
	}
	a.Read([]Input{in}, nil)
	return eachResult{r: a.Report()}
}
