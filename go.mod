module github.com/fairgrid/fairgrid

go 1.26
