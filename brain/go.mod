module github.com/gemhq/gem/brain

go 1.26
